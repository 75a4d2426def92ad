"""
GFlowNet (reduced to the log-probability estimate of test data).
"""
import torch
from tqdm import tqdm

from gflownet.utils.batch import Batch
from gflownet.utils.common import bootstrap_samples, set_device, tlong


class GFlowNetAgent:
    def __init__(self, env, forward_policy, backward_policy, device="cuda", float_precision=32):
        self.device = set_device(device)
        self.float = torch.float32 if float_precision == 32 else torch.float64
        self.env = env
        self.forward_policy = forward_policy
        self.backward_policy = backward_policy

    def estimate_logprobs_data(self, states_term, n_trajectories=100, batch_size=100, bs_num_samples=10000):
        n_states = len(states_term)
        # Compute log probabilities in batches
        logprobs_f = torch.full(
            (n_states, n_trajectories),
            -torch.inf,
            dtype=self.float,
            device=self.device,
        )
        logprobs_b = torch.full(
            (n_states, n_trajectories),
            -torch.inf,
            dtype=self.float,
            device=self.device,
        )
        mult_indices = max(n_states, n_trajectories)
        init_batch = 0
        end_batch = min(batch_size, n_states)
        pbar = tqdm(total=n_states)
        while init_batch < n_states:
            batch = Batch(env=self.env, device=self.device, float_type=self.float)
            self.sample_backward_trajectories(batch, states_term[init_batch:end_batch], n_trajectories)
            traj_indices_batch = tlong(
                batch.get_unique_trajectory_indices(), device=self.device
            )
            data_indices = traj_indices_batch // mult_indices
            traj_indices = traj_indices_batch % mult_indices
            logprobs_f[data_indices, traj_indices] = self.compute_logprobs_trajectories(
                batch, backward=False
            )
            logprobs_b[data_indices, traj_indices] = self.compute_logprobs_trajectories(
                batch, backward=True
            )
            init_batch += batch_size
            end_batch = min(end_batch + batch_size, n_states)
            pbar.update(end_batch - init_batch)

        # Compute log of the average probabilities of the ratio PF / PB
        logprobs_estimates = torch.logsumexp(
            logprobs_f - logprobs_b, dim=1
        ) - torch.log(torch.tensor(n_trajectories, device=self.device))
        logprobs_f_b_bs = bootstrap_samples(
            logprobs_f - logprobs_b, num_samples=bs_num_samples
        )
        logprobs_estimates_bs = torch.logsumexp(logprobs_f_b_bs, dim=1) - torch.log(
            torch.tensor(n_trajectories, device=self.device)
        )
        logprobs_std = torch.std(logprobs_estimates_bs, dim=-1)
        probs_std = torch.std(torch.exp(logprobs_estimates_bs), dim=-1)
        return logprobs_estimates, logprobs_std, probs_std
