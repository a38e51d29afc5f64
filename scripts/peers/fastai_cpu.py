"""fastai on the CPU at its best: bf16 autocast where fastai's own MixedPrecision would use CUDA's.

fastai's MixedPrecision(amp_mode='bf16') / to_bf16() enter torch.autocast('cuda'), which does nothing on a CPU;
CPUMixedPrecision is the same callback with the autocast on the CPU. Used by fastai_fit.py and fastai_regression.py.
"""
import warnings

import torch
from fastai.callback.fp16 import MixedPrecision


class CPUMixedPrecision(MixedPrecision):
    """fastai's MixedPrecision(amp_mode='bf16') with the autocast on the CPU (fastai's own uses device 'cuda')."""
    def before_fit(self):
        with warnings.catch_warnings():  # its autocast('cuda') warns that CUDA is absent; replaced just below
            warnings.simplefilter("ignore")
            super().before_fit()  # a disabled GradScaler for bf16, as fastai does
        self.autocast = torch.autocast("cpu", dtype=torch.bfloat16)
