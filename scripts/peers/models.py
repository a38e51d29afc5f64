"""The networks the peers train, built exactly as kgtrain builds them.

resnet9: lib/model/resnet9.cpp (Page's DAWNBench ResNet-9, the network of ../shared/bench/peer_fmnist.py):
  prep conv_bn(c_in, w) -> layer1 conv_bn(w, 2w) + maxpool 2 -> res1 (2w) -> layer2 conv_bn(2w, 4w) + maxpool 2
  -> layer3 conv_bn(4w, 8w) + maxpool 2 -> res3 (8w) -> global max pool -> fc linear(8w, classes)
  conv_bn = 3x3 conv (pad 1, no bias) + BatchNorm2d + ReLU; res(c) = x + conv_bn(conv_bn(x)).
  Module names follow kgtrain's (prep, layer1, res1, layer2, layer3, res3, fc), so the layer groups match too.
  PyTorch's default initialisation, as LibTorch's (kgtrain re-initialises nothing in this network).

resnet18 / efficientnet_b0: timm's own models (kgtrain's are ports of them, docs/models.md); kgtrain's
recipes/model/efficientnet_b0.toml sets drop_rate 0.2 and drop_path_rate 0.2, the peers are given the same.

Importing this module registers `kg_resnet9` as a timm model (timm.models.register_model), so timm's
create_model, and therefore the train.py replica, builds it by name like any timm model.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBn(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a, self.b = ConvBn(c, c), ConvBn(c, c)

    def forward(self, x):
        return x + self.b(self.a(x))


class ResNet9(nn.Module):
    def __init__(self, in_chans=1, num_classes=10, width=16):
        super().__init__()
        w = width
        self.num_classes = num_classes
        self.prep = ConvBn(in_chans, w)
        self.layer1, self.res1 = ConvBn(w, 2 * w), Residual(2 * w)
        self.layer2 = ConvBn(2 * w, 4 * w)
        self.layer3, self.res3 = ConvBn(4 * w, 8 * w), Residual(8 * w)
        self.fc = nn.Linear(8 * w, num_classes)

    def forward_features(self, x):
        x = self.prep(x)
        x = self.res1(F.max_pool2d(self.layer1(x), 2))
        x = F.max_pool2d(self.layer2(x), 2)
        x = self.res3(F.max_pool2d(self.layer3(x), 2))
        return x

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_max_pool2d(self.forward_features(x), 1), 1))

    # timm's model interface, as much of it as train.py uses
    def get_classifier(self):
        return self.fc


def layer_groups(model):
    """kgtrain's layer groups (kgtrain show --model), stem first, head last: for fastai's splitter."""
    if isinstance(model, ResNet9):
        names = [["prep"], ["layer1", "res1"], ["layer2"], ["layer3", "res3"], ["fc"]]
    elif hasattr(model, "layer4"):  # timm ResNet
        names = [["conv1", "bn1"], ["layer1"], ["layer2"], ["layer3"], ["layer4"], ["fc"]]
    elif hasattr(model, "blocks"):  # timm EfficientNet
        names = [["conv_stem", "bn1"]] + [[f"blocks.{i}"] for i in range(len(model.blocks))] + \
                [["conv_head", "bn2"], ["classifier"]]
    else:
        raise ValueError(f"no layer groups known for {type(model).__name__}")
    mods = dict(model.named_modules())
    return [[p for n in g for p in mods[n].parameters()] for g in names]


def create(name, num_classes, in_chans, width=16):
    """The network by kgtrain's model name, on the CPU, in float32."""
    if name == "resnet9":
        return ResNet9(in_chans, num_classes, width)
    import timm
    extra = dict(drop_rate=0.2, drop_path_rate=0.2) if name == "efficientnet_b0" else {}
    return timm.create_model(name, pretrained=False, num_classes=num_classes, in_chans=in_chans, **extra)


try:
    from timm.models import register_model

    @register_model
    def kg_resnet9(pretrained=False, num_classes=10, in_chans=1, width=16, **kwargs):
        """kgtrain's resnet9 for timm's create_model; timm's generic kwargs (drop rates, pool, cfg) do not apply."""
        assert not pretrained, "kg_resnet9 has no pretrained weights"
        m = ResNet9(in_chans, num_classes, int(width))
        # what resolve_data_config reads when the command line does not say (the runner always says)
        m.pretrained_cfg = dict(input_size=(in_chans, 28, 28), mean=(0.2860,) * in_chans, std=(0.3530,) * in_chans,
                                interpolation="bilinear", crop_pct=1.0, num_classes=num_classes)
        return m
except ImportError:  # timm absent: fastai alone can still use ResNet9
    pass
