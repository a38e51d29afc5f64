// Swin Transformer (Liu et al. 2021), timm's SwinTransformer layout and parameter names: patch_embed.{proj, norm},
// layers.i.downsample.{norm, reduction} (stages 1-3), layers.i.blocks.j.{norm1, attn.qkv, attn.proj,
// attn.relative_position_bias_table, norm2, mlp.fc1, mlp.fc2}, norm, head.fc. Tokens stay NHWC inside; the backbone
// returns the final map as NCHW, so kgtrain's head pools it (timm's avg pool) and Grad-CAM can read it.
// The network is built for data.image_size, as timm's create_model(img_size=...): a stage whose map is no larger than
// the window (7) takes a window of the map's size and no shift, and its relative position table is sized for that
// window; weights saved for another window have their tables resampled on load as timm's checkpoint_filter_fn does
// (resize_rel_pos_bias_table). Maps that are not a multiple of the window are padded, as in timm.
#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "model/layers.h"
#include "model/model.h"

// A namespace of its own: lib/ is compiled in unity batches (Block, Stage and Arch are common names).
namespace kg::model::swin {
namespace {

struct SwinOptions {};  // the shared [model] keys cover what timm's swin_* takes

struct Arch {
  int64_t patch, window, dim;
  std::array<int64_t, 4> depths, heads;
};

torch::nn::LayerNorm layer_norm(int64_t dim) { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})); }

// [B, H, W, C] -> [B * windows, wh * ww, C], windows in row-major order (timm's window_partition).
at::Tensor window_partition(const at::Tensor& x, int64_t wh, int64_t ww) {
  const int64_t b = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
  return x.view({b, h / wh, wh, w / ww, ww, c}).permute({0, 1, 3, 2, 4, 5}).reshape({-1, wh * ww, c});
}
at::Tensor window_reverse(const at::Tensor& windows, int64_t wh, int64_t ww, int64_t h, int64_t w) {
  const int64_t c = windows.size(-1);
  return windows.view({-1, h / wh, w / ww, wh, ww, c}).permute({0, 1, 3, 2, 4, 5}).reshape({-1, h, w, c});
}

// timm's get_relative_position_index: for each pair of tokens in a window, the row of the bias table.
at::Tensor relative_position_index(int64_t wh, int64_t ww) {
  auto ys = torch::arange(wh, torch::kLong).repeat_interleave(ww), xs = torch::arange(ww, torch::kLong).repeat({wh});
  auto dy = ys.unsqueeze(1) - ys.unsqueeze(0) + (wh - 1), dx = xs.unsqueeze(1) - xs.unsqueeze(0) + (ww - 1);
  return dy * (2 * ww - 1) + dx;
}

// timm's resize_rel_pos_bias_table without scipy (BEiT's rule): the source table's offsets are placed on a
// geometric progression that spans the destination's, and each head's table is interpolated linearly on that grid.
std::vector<double> progression(int64_t src, int64_t dst) {
  double left = 1.01, right = 1.5, q = 0;
  auto gp = [](double r, int64_t n) { return (1.0 - std::pow(r, static_cast<double>(n))) / (1.0 - r); };
  while (right - left > 1e-6) {
    q = (left + right) / 2.0;
    (gp(q, src / 2) > static_cast<double>(dst / 2) ? right : left) = q;
  }
  std::vector<double> dis;
  double cur = 1;
  for (int64_t i = 0; i < src / 2; ++i) dis.push_back(cur), cur += std::pow(q, static_cast<double>(i + 1));
  std::vector<double> out;
  for (auto it = dis.rbegin(); it != dis.rend(); ++it) out.push_back(-*it);
  out.push_back(0);
  out.insert(out.end(), dis.begin(), dis.end());
  return out;
}

// timm's RegularGridInterpolator (linear) along one axis: for targets x on source points p, the left/right indices
// and distances (distances clamped at 0 outside; both 1 where a target sits on a point at the edge).
struct Axis {
  at::Tensor left, right, dl, dr;
};
Axis axis(const at::Tensor& p, const at::Tensor& x) {
  Axis a;
  a.right = torch::bucketize(x, p).clamp_max(p.size(0) - 1);
  a.left = (a.right - 1).clamp(0, p.size(0) - 1);
  a.dl = (x - p.index_select(0, a.left.flatten()).view_as(x)).clamp_min(0);
  a.dr = (p.index_select(0, a.right.flatten()).view_as(x) - x).clamp_min(0);
  auto both = a.dl.eq(0).logical_and(a.dr.eq(0));
  a.dl = a.dl.masked_fill(both, 1.0), a.dr = a.dr.masked_fill(both, 1.0);
  return a;
}

at::Tensor resize_bias_table(const at::Tensor& table, int64_t src_window, int64_t dst_window) {
  const int64_t src = 2 * src_window - 1, dst = 2 * dst_window - 1, heads = table.size(1);
  const auto ys = progression(src, dst);
  at::Tensor p = torch::tensor(ys, torch::kDouble).to(torch::kFloat);
  const double t = static_cast<double>(dst / 2);
  at::Tensor d = torch::arange(-t, t + 0.1, 1.0, torch::kFloat);
  at::Tensor gy = d.view({-1, 1}).expand({dst, dst}), gx = d.view({1, -1}).expand({dst, dst});
  Axis ay = axis(p, gy.contiguous()), ax = axis(p, gx.contiguous());
  at::Tensor z = table.to(torch::kFloat).t().reshape({heads, src, src});  // head, y, x
  auto at_ = [&](const at::Tensor& iy, const at::Tensor& ix) { return z.index({torch::indexing::Slice(), iy, ix}); };
  at::Tensor num = at_(ay.left, ax.left) * (ay.dr * ax.dr) + at_(ay.left, ax.right) * (ay.dr * ax.dl) +
                   at_(ay.right, ax.left) * (ay.dl * ax.dr) + at_(ay.right, ax.right) * (ay.dl * ax.dl);
  at::Tensor out = num / ((ay.dl + ay.dr) * (ax.dl + ax.dr));
  return out.reshape({heads, dst * dst}).t().contiguous().to(table.scalar_type());
}

// A tensor kept beside the module's own (not in the state_dict, as timm's non-persistent buffers), moved to where
// it is used on first use there.
at::Tensor on(at::Tensor& cached, const at::Tensor& like) {
  if (cached.device() != like.device()) cached = cached.to(like.device());
  return cached;
}

// Window attention with a learned relative position bias (timm's WindowAttention).
struct WindowAttentionImpl : torch::nn::Module {
  WindowAttentionImpl(int64_t dim, int64_t heads, int64_t wh, int64_t ww) : heads(heads), window(wh * ww) {
    qkv = register_module("qkv", torch::nn::Linear(dim, 3 * dim));
    proj = register_module("proj", torch::nn::Linear(dim, dim));
    relative_position_bias_table =
        register_parameter("relative_position_bias_table", torch::zeros({(2 * wh - 1) * (2 * ww - 1), heads}));
    index_ = relative_position_index(wh, ww);
  }
  // x [B * windows, N, C]; mask [windows, N, N] (0 / -100) for shifted windows, or undefined.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask) {
    const int64_t b = x.size(0), n = x.size(1), c = x.size(2);
    at::Tensor t = apply_linear(qkv, x).reshape({b, n, 3, heads, c / heads}).permute({2, 0, 3, 1, 4});
    // unbind, as timm: its backward stacks the three gradients into one tensor, where three selects would each
    // zero-fill a qkv-sized gradient and add into it.
    const auto parts = t.unbind(0);
    const at::Tensor &q = parts[0], &k = parts[1], &v = parts[2];
    at::Tensor bias = relative_position_bias_table.index_select(0, on(index_, x).view(-1))
                          .view({window, window, heads})
                          .permute({2, 0, 1})
                          .unsqueeze(0);
    // Matrix products and softmax, as timm's Swin by default (its fused path is experimental, off unless asked for):
    // PyTorch 2.x's scaled_dot_product_attention with a mask picks other kernels with and without autograd, so a
    // checkpointed stage's recompute would differ from its forward in the last bits.
    at::Tensor scores = torch::matmul(q * std::pow(static_cast<double>(c / heads), -0.5), k.transpose(-2, -1)) +
                        bias.to(q.scalar_type());
    if (mask.defined()) {  // as timm: the mask broadcast over batch and heads, not materialised at the scores' size
      const int64_t nw = mask.size(0);
      scores = (scores.view({-1, nw, heads, n, n}) + mask.view({1, nw, 1, n, n}).to(scores.scalar_type()))
                   .view({-1, heads, n, n});
    }
    at::Tensor y = torch::softmax(scores, -1).matmul(v);
    return apply_linear(proj, y.transpose(1, 2).reshape({b, n, c}));
  }
  int64_t heads, window;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  at::Tensor relative_position_bias_table, index_;
};
TORCH_MODULE(WindowAttention);

struct BlockImpl : torch::nn::Module {
  // `res` is the map this block sees when built; a map no larger than the window takes a window of its size and no
  // shift (timm's _calc_window_shift).
  BlockImpl(int64_t dim, int64_t heads, int64_t window, bool shifted, std::array<int64_t, 2> res, double dp)
      : drop_path_rate(dp) {
    for (int d = 0; d < 2; ++d) {
      win[d] = res[d] <= window ? res[d] : window;
      shift[d] = shifted && res[d] > win[d] ? window / 2 : 0;
    }
    norm1 = register_module("norm1", layer_norm(dim));
    attn = register_module("attn", WindowAttention(dim, heads, win[0], win[1]));
    norm2 = register_module("norm2", layer_norm(dim));
    mlp = register_module("mlp", Mlp(dim, 4 * dim));
  }
  // timm's get_attn_mask for a padded map of hp x wp: tokens from different regions of the rolled map don't attend.
  at::Tensor attn_mask(int64_t hp, int64_t wp, const at::Tensor& like) {
    if (shift[0] == 0 && shift[1] == 0) return {};
    if (mask_.defined() && mask_hw_ == std::array<int64_t, 2>{hp, wp} && mask_.device() == like.device()) return mask_;
    at::Tensor img = torch::zeros({1, hp, wp, 1});
    auto bounds = [](int64_t size, int64_t w, int64_t s) {
      return std::array<std::pair<int64_t, int64_t>, 3>{{{0, size - w}, {size - w, size - s}, {size - s, size}}};
    };
    int cnt = 0;
    for (auto [y0, y1] : bounds(hp, win[0], shift[0]))
      for (auto [x0, x1] : bounds(wp, win[1], shift[1])) img.slice(1, y0, y1).slice(2, x0, x1).fill_(cnt++);
    at::Tensor m = window_partition(img, win[0], win[1]).squeeze(-1);  // [windows, N]
    at::Tensor d = m.unsqueeze(1) - m.unsqueeze(2);
    mask_ = d.ne(0).to(torch::kFloat).mul_(-100.0).to(like.device());
    mask_hw_ = {hp, wp};
    return mask_;
  }
  at::Tensor forward(const at::Tensor& x) {  // [B, H, W, C]
    const int64_t b = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
    at::Tensor y = run_norm(norm1, x);
    const bool shifted = shift[0] != 0 || shift[1] != 0;
    if (shifted) y = torch::roll(y, {-shift[0], -shift[1]}, {1, 2});
    const int64_t ph = (win[0] - h % win[0]) % win[0], pw = (win[1] - w % win[1]) % win[1];
    if (ph || pw) y = torch::constant_pad_nd(y, {0, 0, 0, pw, 0, ph});
    const int64_t hp = h + ph, wp = w + pw;
    y = attn->forward(window_partition(y, win[0], win[1]), attn_mask(hp, wp, x));
    y = window_reverse(y, win[0], win[1], hp, wp);
    if (ph || pw) y = y.slice(1, 0, h).slice(2, 0, w);  // an unpadded map skips the slices' zero-filling backward
    if (shifted) y = torch::roll(y, {shift[0], shift[1]}, {1, 2});
    at::Tensor out = x + drop_path(y, drop_path_rate, is_training());
    at::Tensor flat = out.reshape({b, -1, c});
    flat = flat + drop_path(mlp->forward(run_norm(norm2, flat)), drop_path_rate, is_training());
    return flat.reshape({b, h, w, c});
  }
  double drop_path_rate;
  std::array<int64_t, 2> win{}, shift{}, mask_hw_{};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  WindowAttention attn{nullptr};
  Mlp mlp{nullptr};
  at::Tensor mask_;
};
TORCH_MODULE(Block);

// timm's PatchMerging: each 2x2 neighbourhood's channels side by side (padded to even), LayerNorm, linear to 2C.
struct PatchMergingImpl : torch::nn::Module {
  explicit PatchMergingImpl(int64_t dim) {
    norm = register_module("norm", layer_norm(4 * dim));
    reduction = register_module("reduction", torch::nn::Linear(torch::nn::LinearOptions(4 * dim, 2 * dim).bias(false)));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = torch::constant_pad_nd(x, {0, 0, 0, x.size(2) % 2, 0, x.size(1) % 2});
    const int64_t b = y.size(0), h = y.size(1), w = y.size(2), c = y.size(3);
    y = y.reshape({b, h / 2, 2, w / 2, 2, c}).permute({0, 1, 3, 4, 2, 5}).flatten(3);
    return reduction->forward(run_norm(norm, y));
  }
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear reduction{nullptr};
};
TORCH_MODULE(PatchMerging);

struct StageImpl : torch::nn::Module {
  StageImpl(int64_t dim, bool downsample_first, torch::nn::Sequential b) {
    if (downsample_first) downsample = register_module("downsample", PatchMerging(dim / 2));
    blocks = register_module("blocks", std::move(b));
  }
  at::Tensor forward(const at::Tensor& x) { return blocks->forward(downsample ? downsample->forward(x) : x); }
  PatchMerging downsample{nullptr};
  torch::nn::Sequential blocks{nullptr};
};
TORCH_MODULE(Stage);

class SwinTransformer final : public Network {
 public:
  SwinTransformer(const std::string& name, const Arch& a, const ModelContext& ctx) {
    namespace nn = torch::nn;
    const int64_t min_side = a.patch * 8;  // three 2x merges after the patch embedding leave at least one token
    KG_CHECK(ctx.height >= min_side && ctx.width >= min_side, ConfigError, "model ", name, " needs images of at least ",
             min_side, "x", min_side, " pixels (a ", a.patch, "x", a.patch,
             " patch embedding, then three 2x merges), got ", ctx.height, "x", ctx.width, "; set data.image_size");
    auto patch_embed = register_module("patch_embed", std::make_shared<nn::Module>());
    proj_ = patch_embed->register_module("proj",
                                         nn::Conv2d(nn::Conv2dOptions(ctx.in_chans, a.dim, a.patch).stride(a.patch)));
    embed_norm_ = patch_embed->register_module("norm", layer_norm(a.dim));
    auto layers = register_module("layers", nn::ModuleList());
    const std::array<int64_t, 2> grid{ctx.height / a.patch, ctx.width / a.patch};
    std::array<int64_t, 2> res = grid;
    const int64_t total = a.depths[0] + a.depths[1] + a.depths[2] + a.depths[3];
    int64_t dim = a.dim, index = 0;
    std::vector<std::string> tables;
    for (size_t s = 0; s < 4; ++s) {
      if (s > 0) {  // timm's input_resolution: ceil(grid / 2^(s-1)) // 2, the map after the merge (floored)
        const int64_t scale = int64_t{1} << (s - 1);
        for (int d = 0; d < 2; ++d) res[d] = (grid[d] + scale - 1) / scale / 2;
        dim *= 2;
      }
      nn::Sequential blocks;
      for (int64_t j = 0; j < a.depths[s]; ++j) {
        blocks->push_back(Block(dim, a.heads[s], a.window, j % 2 == 1, res,
                                block_drop_path(ctx.model.drop_path_rate, index++, total)));
        tables.push_back("layers." + std::to_string(s) + ".blocks." + std::to_string(j) +
                         ".attn.relative_position_bias_table");
        windows_[tables.back()] = blocks->ptr<BlockImpl>(static_cast<size_t>(j))->win;
      }
      stages_[s] = Stage(dim, s > 0, blocks);
      layers->push_back(stages_[s]);
    }
    norm_ = register_module("norm", layer_norm(dim));
    init_weights(*this);
    head_ = register_module("head", std::make_shared<nn::Module>());
    add_group("stem", {"patch_embed"});
    for (int s = 0; s < 4; ++s) add_group("layers." + std::to_string(s), {"layers." + std::to_string(s)});
    add_group("norm", {"norm"});
    set_first_conv("patch_embed.proj.weight");
    set_no_weight_decay(tables);  // timm's no_weight_decay(): every relative_position_bias_table
    finish(ctx, *head_, "head.fc");
    init_weights(*head_);
  }

  at::Tensor forward_features(const at::Tensor& input) override {
    at::Tensor x = run_norm(embed_norm_, proj_->forward(input).permute({0, 2, 3, 1}));
    for (auto& s : stages_) x = run_stage(s, x);
    return run_norm(norm_, x).permute({0, 3, 1, 2});
  }

  at::Tensor fit_loaded(const std::string& name, const at::Tensor& file, const at::Tensor& model,
                        std::string& note) const override {
    auto it = windows_.find(name);
    if (it == windows_.end() || it->second[0] != it->second[1] || file.dim() != 2 || file.size(1) != model.size(1))
      return {};
    const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(file.size(0)))));
    if (side * side != file.size(0) || side % 2 == 0) return {};
    const int64_t from = (side + 1) / 2;
    note = name + " window " + std::to_string(from) + " -> " + std::to_string(it->second[0]);
    torch::NoGradGuard no_grad;
    return resize_bias_table(file, from, it->second[0]);
  }

 private:
  // timm's init_weights_vit_timm: linears trunc_normal(.02) with zero biases; the bias tables trunc_normal(.02).
  static void init_weights(torch::nn::Module& m) {
    torch::NoGradGuard no_grad;
    for (auto& mod : m.modules(/*include_self=*/false)) {
      if (auto* l = mod->as<torch::nn::Linear>()) {
        trunc_normal_(l->weight, 0.02);
        if (l->bias.defined()) l->bias.zero_();
      } else if (auto* w = mod->as<WindowAttention>()) {
        trunc_normal_(w->relative_position_bias_table, 0.02);
      }
    }
  }

  torch::nn::Conv2d proj_{nullptr};
  torch::nn::LayerNorm embed_norm_{nullptr}, norm_{nullptr};
  std::array<Stage, 4> stages_{nullptr, nullptr, nullptr, nullptr};
  std::shared_ptr<torch::nn::Module> head_;
  std::map<std::string, std::array<int64_t, 2>> windows_;  // each bias table's window, for fit_loaded
};

void add_swin(const std::string& name, const std::string& doc, const Arch& a) {
  model_registry().add(name, doc, "[model]\nname = \"" + name + "\"", config::Fields<SwinOptions>(),
                       [name, a](const SwinOptions&, const ModelContext& ctx) -> NetworkPtr {
                         return std::make_shared<SwinTransformer>(name, a, ctx);
                       });
}

const bool kSwinRegistered = [] {
  add_swin("swin_tiny_patch4_window7_224", "Swin-T (timm names; 28.3M parameters at 1000 classes; >= 32 px)",
           {4, 7, 96, {2, 2, 6, 2}, {3, 6, 12, 24}});
  add_swin("swin_small_patch4_window7_224", "Swin-S (timm names; 49.6M parameters at 1000 classes; >= 32 px)",
           {4, 7, 96, {2, 2, 18, 2}, {3, 6, 12, 24}});
  add_swin("swin_base_patch4_window7_224", "Swin-B (timm names; 87.8M parameters at 1000 classes; >= 32 px)",
           {4, 7, 128, {2, 2, 18, 2}, {4, 8, 16, 32}});
  add_swin("swin_base_patch4_window12_384", "Swin-B, window 12 (timm names; 87.9M parameters at 1000 classes)",
           {4, 12, 128, {2, 2, 18, 2}, {4, 8, 16, 32}});
  add_swin("swin_large_patch4_window7_224", "Swin-L (timm names; 196.5M parameters at 1000 classes; >= 32 px)",
           {4, 7, 192, {2, 2, 18, 2}, {6, 12, 24, 48}});
  return true;
}();

}  // namespace
}  // namespace kg::model::swin
