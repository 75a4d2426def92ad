# Reduced from https://github.com/huggingface/accelerate/issues/2251
# Scenario 2; the default rule that should find it: DK002 (buggy twin)
def training_losses(self, batch):
    t, weights = self.schedule_sampler.sample(batch.shape[0])
    t.to(batch.device)
    weights.to(batch.device)
    return self.diffusion.training_losses(self.model, batch, t), weights
