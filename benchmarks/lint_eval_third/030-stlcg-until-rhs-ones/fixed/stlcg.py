import torch

LARGE_NUMBER = 1E4


class Maxish(torch.nn.Module):
    def forward(self, x, scale, dim=1, keepdim=True):
        if scale > 0:
            return torch.softmax(x * scale, dim=dim) * x
        return x.max(dim, keepdim=keepdim)[0]


class Minish(torch.nn.Module):
    def forward(self, x, scale, dim=1, keepdim=True):
        if scale > 0:
            return -torch.logsumexp(-x * scale, dim=dim, keepdim=keepdim) / scale
        return x.min(dim, keepdim=keepdim)[0]


class STL_Formula(torch.nn.Module):
    def robustness_trace(self, trace, pscale=1, scale=-1, **kwargs):
        raise NotImplementedError

    def forward(self, inputs, **kwargs):
        return self.robustness_trace(inputs, **kwargs)


class Identity(STL_Formula):
    def __init__(self, name='x'):
        super(Identity, self).__init__()
        self.name = name

    def robustness_trace(self, trace, pscale=1, **kwargs):
        return trace * pscale


class Always(STL_Formula):
    def __init__(self, subformula):
        super(Always, self).__init__()
        self.subformula = subformula
        self.operation = Minish()

    def robustness_trace(self, inputs, pscale=1, scale=-1, **kwargs):
        trace = self.subformula(inputs, pscale=pscale, scale=scale)
        return self.operation(trace, scale, dim=1, keepdim=False)


class Until(STL_Formula):
    def __init__(self, subformula1="Until subformula1", subformula2="Until subformula2"):
        '''
        subformula1 U subformula2
        '''
        super(Until, self).__init__()
        self.subformula1 = subformula1
        self.subformula2 = subformula2

    def robustness_trace(self, inputs, pscale=1, scale=-1, **kwargs):
        '''
        trace1 is the robustness trace of ϕ
        trace2 is the robustness trace of ψ
        trace1 and trace2 are size [batch_size, time_dim, x_dim]
        '''
        x, y = inputs
        trace1 = self.subformula1(x, pscale=pscale, scale=scale)
        trace2 = self.subformula2(y, pscale=pscale, scale=scale)
        Alw = Always(subformula=Identity(name=str(self.subformula1)))
        minish = Minish()
        maxish = Maxish()
        LHS = trace2.unsqueeze(-1).repeat([1, 1, 1,trace2.shape[1]]).permute(0, 3, 2, 1)                                  # [batch_size, time_dim, x_dim, time_dim]
        RHS = torch.ones(LHS.shape).to(x.device)*-LARGE_NUMBER                                                    # [batch_size, time_dim, x_dim, time_dim]
        for i in range(trace2.shape[1]):
            RHS[:,i:,:,i] = Alw(trace1[:,i:,:], pscale=pscale, scale=scale)
        # first min over the (ρ(ψ), ◻ρ(ϕ))
        # then max over the t′ dimension (the second time_dime dimension)
        return maxish(minish(torch.stack([LHS, RHS], dim=-1), scale=scale, dim=-1).squeeze(-1), scale=scale, dim=-1).squeeze(-1)                                                              # [batch_size, time_dim, x_dim]


if __name__ == "__main__":
    device = torch.device("cuda")
    x = torch.randn(4, 10, 1, device=device)
    y = torch.randn(4, 10, 1, device=device)
    formula = Until(Identity('x'), Identity('y'))
    print(formula((x, y)).shape)
