"""ElasticSampler: shards a dataset over the current ranks and resumes mid-epoch after the
number of ranks changed (Horovod's horovod.torch.elastic.sampler)."""
import math
import random
from typing import Dict, Iterator, List

import torch.utils.data

from hvd.basics import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Like DistributedSampler, but records how many samples all ranks processed this epoch
    (``record_batch``) so a reset re-partitions only the remaining ones.

    Call ``set_epoch(epoch)`` at the end of each epoch; the state (epoch, processed_num) is
    part of a TorchState and synchronized from rank 0.
    """

    def __init__(self, dataset, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Records that every rank processed a batch of `batch_size` samples."""
        self.processed_num += batch_size * self.num_replicas

    def load_state_dict(self, state_dict: Dict[str, int]) -> None:
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def state_dict(self) -> Dict[str, int]:
        return dict(epoch=self.epoch, processed_num=self.processed_num)

    def reset(self) -> None:
        self.num_replicas = size()
        self.rank = rank()
        indices: List[int] = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(indices)
        self.remaining_indices = indices[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        indices = self.remaining_indices[:]
        # Pad to an even split by repeating the remaining samples, as often as needed: fewer
        # left than half the ranks (the end of an epoch after a reset, a tiny dataset) used to
        # leave some ranks a sample short of len(), so the ranks ran different numbers of
        # steps and their collectives stalled (Horovod's sampler asserts there).
        pad = self.total_size - len(indices)
        if pad > 0:
            indices += (indices * math.ceil(pad / len(indices)))[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples
