"""The PyTorch definition of ScaFFold's 3-D U-Net, its training loss and its metrics (spec §5, §6.2-6.3),
shared by scripts/make_golden.py (golden fixtures for the C tests) and scripts/torch_reference.py (the
PyTorch benchmark our C/StarPU implementation is compared against).

Works with torch 1.13 and 2.x. Everything is dtype-agnostic: make_golden runs it in float64, the
benchmark in float32 (the loss always in the logits' dtype; callers upcast bf16 logits first).
Parameter names follow sf_unet (include/scaffold/model.h): inc, down1..downL, up1..upL with up1 the
DEEPEST Up, outc; DoubleConv's Sequential indices 0 conv, 1 GroupNorm, 2 ReLU, 3 conv, 4 GN, 5 ReLU.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

GN_EPS = 1e-5  # GroupNorm epsilon (torch default, upstream does not change it)
DICE_EPS = 1e-6


def f32(t):
    """A float32 draw, promoted to float64 (exactly representable)."""
    return t.to(torch.float32).to(torch.float64)


# ---------------------------------------------------------------- the upstream U-Net (spec §5)
class DoubleConv(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv3d(cin, cout, kernel_size=3, padding=1, bias=False),
            nn.GroupNorm(groups, cout, eps=GN_EPS),
            nn.ReLU(inplace=True),
            nn.Conv3d(cout, cout, kernel_size=3, padding=1, bias=False),
            nn.GroupNorm(groups, cout, eps=GN_EPS),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool3d(2), DoubleConv(cin, cout, groups))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, cin, cout, groups):
        super().__init__()
        self.up = nn.ConvTranspose3d(cin, cin // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(cin, cout, groups)

    def forward(self, x1, x2):
        x1 = self.up(x1)  # power-of-two sizes: upstream's pad is a no-op
        return self.conv(torch.cat([x2, x1], dim=1))


class OutConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    """inc, down1..downL, up1..upL (up1 is the DEEPEST: Up(c_L, c_{L-1})), outc. c_i = base * 2^i."""

    def __init__(self, n_channels, n_classes, layers, base, groups):
        super().__init__()
        c = [base * 2 ** i for i in range(layers + 1)]
        self.layers = layers
        self.inc = DoubleConv(n_channels, c[0], groups)
        for i in range(1, layers + 1):
            setattr(self, "down%d" % i, Down(c[i - 1], c[i], groups))
        for k in range(1, layers + 1):
            j = layers - k + 1
            setattr(self, "up%d" % k, Up(c[j], c[j - 1], groups))
        self.outc = OutConv(c[0], n_classes)

    def forward(self, x):
        feats = [self.inc(x)]
        for i in range(1, self.layers + 1):
            feats.append(getattr(self, "down%d" % i)(feats[-1]))
        y = feats[-1]
        for k in range(1, self.layers + 1):
            y = getattr(self, "up%d" % k)(y, feats[self.layers - k])
        return self.outc(y)


def unet_forward_flops(problem_scale, bottleneck, base, n_classes, in_channels=3):
    """Forward conv FLOPs of one sample (spec §5.4, 2 per MAC): the 3^3 convs, the k2 s2 transposed
    convs and the OutConv; the same sum as sf_unet_build's forward_flops (src/model/unet.c)."""
    L = problem_scale - bottleneck
    c = [base * 2 ** i for i in range(L + 1)]
    vox = [float(2 ** (problem_scale - i)) ** 3 for i in range(L + 1)]
    macs = 0.0
    for i in range(L + 1):  # encoder DoubleConv at level i
        cin = in_channels if i == 0 else c[i - 1]
        macs += vox[i] * 27.0 * (cin * c[i] + c[i] * c[i])
    for j in range(1, L + 1):  # Up(c_j, c_{j-1}) producing level j-1
        macs += vox[j - 1] * c[j] * c[j - 1]  # ConvTranspose: each output voxel reads one input voxel
        macs += vox[j - 1] * 27.0 * (c[j] * c[j - 1] + c[j - 1] * c[j - 1])
    macs += vox[0] * c[0] * n_classes  # OutConv
    return 2.0 * macs


# ---------------------------------------------------------------- loss and metrics (spec §6.2-6.3)
def soft_loss(z, lab, cw):
    """z: (B,K,D,H,W) logits, lab: (B,D,H,W) int64, cw: (K) in z's dtype. Returns ce, dice_fg, loss.

    CE is upstream's sharded form: sum_v w[y_v](-log p_{y_v,v}) / sum_v w[y_v] (reduction='none', then
    the two sums), i.e. PyTorch's weighted 'mean'. Dice is the soft Dice per (sample, class) with
    eps 1e-6 and S := I where S == 0, averaged over the batch and the foreground classes 1..K-1."""
    K = z.shape[1]
    logp = F.log_softmax(z, dim=1)
    nll = F.nll_loss(logp, lab, reduction="none")  # (B,D,H,W): -log p_y
    wy = cw[lab]
    ce = (wy * nll).sum() / wy.sum()
    P = logp.exp()
    Y = F.one_hot(lab, K).permute(0, 4, 1, 2, 3).to(z.dtype)
    inter = 2 * (P * Y).sum(dim=(2, 3, 4))
    s = P.sum(dim=(2, 3, 4)) + Y.sum(dim=(2, 3, 4))
    s = torch.where(s == 0, inter, s)
    dice = (inter + DICE_EPS) / (s + DICE_EPS)
    dice_fg = dice[:, 1:].mean()
    return ce, dice_fg, ce + 1 - dice_fg


def hard_dice(z, lab):
    """Validation Dice of one sample: per-class hard Dice (float64) and its foreground mean."""
    K = z.shape[1]
    P = F.one_hot(z.argmax(dim=1), K).permute(0, 4, 1, 2, 3).to(torch.float64)
    Y = F.one_hot(lab, K).permute(0, 4, 1, 2, 3).to(torch.float64)
    inter = 2 * (P * Y).sum(dim=(2, 3, 4))
    s = P.sum(dim=(2, 3, 4)) + Y.sum(dim=(2, 3, 4))
    s = torch.where(s == 0, inter, s)
    dice = (inter + DICE_EPS) / (s + DICE_EPS)
    return dice[0], dice[0, 1:].mean()


def class_weights(lab, K):
    """spec §6.2: w0 = T/bg, w[1..K-1] = T/fg (all 1 if bg or fg is 0); float32 values as float64."""
    counts = torch.bincount(lab.flatten(), minlength=K).to(torch.float64)
    bg, fg = counts[0], counts[1:].sum()
    if bg == 0 or fg == 0:
        return torch.ones(K, dtype=torch.float64)
    T = bg + fg
    w = torch.full((K,), float(T / fg), dtype=torch.float64)
    w[0] = T / bg
    return f32(w)
