"""How kernelbot builds gpt/model.py's layers: the repository's own file,
named in .kernelbot.yml as `kernelbot_entry:FUNCTION`, so the model file
stays as upstream wrote it. Each function returns the constructor's
arguments; the sizes are a small GPT's."""
from gpt.config import GPTConfig

CONFIG = GPTConfig(block_size=64, n_head=4, n_embd=128, bias=True)


def config_args():
    return [CONFIG]


def layer_norm_args():
    return [CONFIG.n_embd, CONFIG.bias]
