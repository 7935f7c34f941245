"""The layers of ``jitgrad.nn``, one file per kind; ``module.py`` holds the base class."""
from .activation import (CELU, ELU, GELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish,
                         ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softsign, Tanh)
from .activation_more import (GLU, Hardshrink, PReLU, RReLU, Softmax2d, Softmin, Softplus, Softshrink,
                              Tanhshrink, Threshold)
from .adaptive_max_pooling import AdaptiveMaxPool1d, AdaptiveMaxPool2d, AlphaDropout
from .attention import MultiheadAttention
from .bilinear import Bilinear
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import Dropout, Dropout1d, Dropout2d
from .embedding import Embedding
from .flatten import Flatten, Unflatten
from .fold import Fold, Unfold
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, \
    SmoothL1Loss
from .loss_more import (CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, MarginRankingLoss,
                        MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss)
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm
from .normalization_more import InstanceNorm1d, InstanceNorm2d, LocalResponseNorm, RMSNorm
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
                      ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, \
    TransformerEncoderLayer
from .upsampling import PixelShuffle, PixelUnshuffle, Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "CELU", "CircularPad1d", "CircularPad2d", "CircularPad3d",
           "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
           "CosineSimilarity", "CrossEntropyLoss", "Dropout", "Dropout1d", "Dropout2d", "ELU", "Embedding", "Flatten",
           "GELU", "GRU", "GRUCell", "GroupNorm", "Hardsigmoid", "Hardswish", "Hardtanh", "HuberLoss", "Identity",
           "KLDivLoss", "L1Loss", "LSTM", "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax",
           "MSELoss", "MaxPool1d", "MaxPool2d", "Mish", "Module", "ModuleDict", "ModuleList", "MultiheadAttention",
           "NLLLoss", "PairwiseDistance", "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle", "RNN",
           "RNNCell", "ReLU", "ReLU6", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "SELU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax",
           "Softsign", "Tanh", "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer", "Unflatten", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]
__all__ += ["AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AlphaDropout", "Bilinear", "CosineEmbeddingLoss", "Fold",
            "GLU", "GaussianNLLLoss", "Hardshrink", "HingeEmbeddingLoss", "InstanceNorm1d", "InstanceNorm2d",
            "LocalResponseNorm", "MarginRankingLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PReLU",
            "PoissonNLLLoss", "RMSNorm", "RReLU", "SoftMarginLoss", "Softmax2d", "Softmin", "Softplus", "Softshrink",
            "Tanhshrink", "Threshold", "TripletMarginLoss", "Unfold"]
