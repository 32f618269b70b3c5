"""tensorgrad.nn: modules, layers, functional forms, initialisation, optimizers, checkpoints.

    from tensorgrad import nn
    import tensorgrad.nn.functional as F
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = nn.optim.AdamW(model.parameters(), lr=1e-3)
    nn.save({"model": model.state_dict(), "optim": opt.state_dict()}, "ckpt.safetensors")
"""
from . import functional, init, optim, utils  # noqa: F401
from . import parallel  # noqa: F401  (DistributedDataParallel)
from .checkpoint import CheckpointError, load, save  # noqa: F401
from .containers import (  # noqa: F401
    ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from .activation import (  # noqa: F401
    CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
    LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid, SiLU, Softmax, Softmax2d, Softmin,
    Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold,
)
from .conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
)
from .layers import Dropout, Embedding, Identity, LayerNorm, Linear, RMSNorm  # noqa: F401
from .loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
    HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MarginRankingLoss, MSELoss, NLLLoss,
    PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
)
from .module import Module, Parameter, RemovableHandle  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm  # noqa: F401
from .pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
    AvgPool2d, AvgPool3d, Flatten, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d,
    MaxUnpool3d, Unflatten, Upsample,
)
from . import masks, positional  # noqa: F401
from .attention import Attention, KVCache, MultiheadAttention  # noqa: F401
from .attention_patterns import (  # noqa: F401
    BigBird, LinearAttention, SlidingWindow, Strided, make_pattern,
)
from .feedforward import FeedForward  # noqa: F401
from .positional import (  # noqa: F401
    LearnedPositionalEncoding, RelativePositionBias, RotaryEmbedding, SinusoidalPositionalEncoding,
)
from .transformer import DecoderBlock, EncoderBlock  # noqa: F401
from .lora import LoraLinear, ModulesToSaveWrapper  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance, TripletMarginLoss  # noqa: F401
from .channels import (  # noqa: F401
    AlphaDropout, Dropout1d, Dropout2d, Dropout3d, PixelShuffle, PixelUnshuffle,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401
from .pytorch_transformer import (  # noqa: F401
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
