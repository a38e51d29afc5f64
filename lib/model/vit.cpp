// Vision Transformer (Dosovitskiy et al. 2021), DeiT (Touvron et al. 2021) and DeiT III (Touvron et al. 2022), timm's
// VisionTransformer layout and parameter names: cls_token, pos_embed, patch_embed.proj, blocks.i.{norm1, attn.qkv,
// attn.proj, ls1.gamma, norm2, mlp.fc1, mlp.fc2, ls2.gamma}, norm (fc_norm with global_pool = "avg"), head.
// The network is built for data.image_size: pos_embed holds one entry per patch of that image (plus the class
// token's, except DeiT III's), and weights saved for another size have theirs resampled as timm does on load
// (bicubic, antialiased). An input of yet another size (progressive resizing, TTA) resamples it on the fly, as timm's
// dynamic_img_size. The _224 / _384 in a name is the resolution its published weights were trained at.
#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "device/compat.h"
#include "model/layers.h"
#include "model/model.h"

// A namespace of its own: lib/ is compiled in unity batches, and Block, Attention, Arch are common names.
namespace kg::model::vit {
namespace {

struct ViTOptions {};  // the shared [model] keys cover what timm's vit_* takes

constexpr double kNormEps = 1e-6;

struct Arch {
  int64_t patch, dim, depth, heads;
  bool deit3 = false;  // DeiT III: layer scale (init 1e-6) and a pos_embed without the class token's entry
};

torch::nn::LayerNorm layer_norm(int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(kNormEps));
}

// pos_embed [1, prefix + h0 * w0, D] resampled to an h x w grid, as timm's resample_abs_pos_embed: the grid part in
// float32, bicubic with antialiasing (F.interpolate(..., antialias=True)), the prefix entries kept.
at::Tensor resample_pos_embed(const at::Tensor& pe, int64_t prefix, int64_t h0, int64_t w0, int64_t h, int64_t w) {
  const int64_t dim = pe.size(2);
  at::Tensor grid = pe.slice(1, prefix).to(at::kFloat).reshape({1, h0, w0, dim}).permute({0, 3, 1, 2});
  grid = at::_upsample_bicubic2d_aa(grid, {h, w}, /*align_corners=*/false, c10::nullopt, c10::nullopt);
  grid = grid.permute({0, 2, 3, 1}).reshape({1, h * w, dim}).to(pe.scalar_type());
  return prefix > 0 ? torch::cat({pe.slice(1, 0, prefix), grid}, 1) : grid;
}

// timm's Attention: qkv in one linear, heads of dim / heads, softmax(q k^T / sqrt(head dim)) v, then proj.
struct AttentionImpl : torch::nn::Module {
  AttentionImpl(int64_t dim, int64_t heads) : heads(heads) {
    qkv = register_module("qkv", torch::nn::Linear(dim, 3 * dim));
    proj = register_module("proj", torch::nn::Linear(dim, dim));
  }
  at::Tensor forward(const at::Tensor& x) {
    const int64_t b = x.size(0), n = x.size(1), c = x.size(2);
    at::Tensor t = apply_linear(qkv, x).reshape({b, n, 3, heads, c / heads}).permute({2, 0, 3, 1, 4});
    // unbind, as timm: its backward stacks the three gradients into one tensor, where three selects would each
    // zero-fill a qkv-sized gradient and add into it.
    const auto parts = t.unbind(0);
    const at::Tensor &q = parts[0], &k = parts[1], &v = parts[2];
#if KG_TORCH_VERSION_AT_LEAST(2, 0)
    at::Tensor y = at::scaled_dot_product_attention(q, k, v);  // the fused kernels timm uses (fused_attn)
#else
    at::Tensor y =
        torch::softmax(torch::matmul(q * std::pow(static_cast<double>(c / heads), -0.5), k.transpose(-2, -1)), -1)
            .matmul(v);
#endif
    return apply_linear(proj, y.transpose(1, 2).reshape({b, n, c}));
  }
  int64_t heads;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(Attention);

// timm's LayerScale: a learned per-channel scale of the residual branch (DeiT III, init 1e-6).
struct LayerScaleImpl : torch::nn::Module {
  explicit LayerScaleImpl(int64_t dim) : gamma(register_parameter("gamma", torch::full({dim}, 1e-6))) {}
  at::Tensor forward(const at::Tensor& x) { return x * gamma; }
  at::Tensor gamma;
};
TORCH_MODULE(LayerScale);

// x + drop_path(ls1(attn(norm1(x)))), then x + drop_path(ls2(mlp(norm2(x)))).
struct BlockImpl : torch::nn::Module {
  BlockImpl(const Arch& a, double dp) : drop_path_rate(dp) {
    norm1 = register_module("norm1", layer_norm(a.dim));
    attn = register_module("attn", Attention(a.dim, a.heads));
    if (a.deit3) ls1 = register_module("ls1", LayerScale(a.dim));
    norm2 = register_module("norm2", layer_norm(a.dim));
    mlp = register_module("mlp", Mlp(a.dim, 4 * a.dim));
    if (a.deit3) ls2 = register_module("ls2", LayerScale(a.dim));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = attn->forward(run_norm(norm1, x));
    at::Tensor h = x + drop_path(ls1 ? ls1->forward(y) : y, drop_path_rate, is_training());
    y = mlp->forward(run_norm(norm2, h));
    return h + drop_path(ls2 ? ls2->forward(y) : y, drop_path_rate, is_training());
  }
  double drop_path_rate;
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  LayerScale ls1{nullptr}, ls2{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(Block);

class VisionTransformer final : public Network {
 public:
  VisionTransformer(const std::string& name, const Arch& a, const ModelContext& ctx)
      : prefix_(a.deit3 ? 0 : 1), avg_(ctx.model.global_pool == "avg") {
    namespace nn = torch::nn;
    KG_CHECK(ctx.height >= a.patch && ctx.width >= a.patch, ConfigError, "model ", name, " needs images of at least ",
             a.patch, "x", a.patch, " pixels (its patch), got ", ctx.height, "x", ctx.width, "; set data.image_size");
    grid_h_ = ctx.height / a.patch, grid_w_ = ctx.width / a.patch;
    auto patch_embed = register_module("patch_embed", std::make_shared<nn::Module>());
    proj_ = patch_embed->register_module("proj",
                                         nn::Conv2d(nn::Conv2dOptions(ctx.in_chans, a.dim, a.patch).stride(a.patch)));
    cls_token_ = register_parameter("cls_token", torch::zeros({1, 1, a.dim}));
    pos_embed_ = register_parameter("pos_embed", torch::zeros({1, prefix_ + grid_h_ * grid_w_, a.dim}));
    auto blocks = register_module("blocks", nn::ModuleList());
    for (int64_t i = 0; i < a.depth; ++i) {
      blocks_.push_back(Block(a, block_drop_path(ctx.model.drop_path_rate, i, a.depth)));
      blocks->push_back(blocks_.back());
    }
    // timm: the final norm before the class token is read; with average pooling, fc_norm after the pooling instead.
    norm_ = register_module(avg_ ? "fc_norm" : "norm", layer_norm(a.dim));
    init_weights();

    add_group("stem", {"cls_token", "pos_embed", "patch_embed"});
    for (int64_t i = 0; i < a.depth; ++i) add_group("blocks." + std::to_string(i), {"blocks." + std::to_string(i)});
    add_group("norm", {avg_ ? "fc_norm" : "norm"});
    set_first_conv("patch_embed.proj.weight");
    set_no_weight_decay({"cls_token", "pos_embed"});  // timm's no_weight_decay()
    finish(ctx, *this, "head", "token", {"token", "avg"});
    init_linear(*named_children()["head"]);
  }

  // [N, C, H, W] -> the class token's features [N, dim] (or the patch tokens' mean, global_pool = "avg").
  at::Tensor forward_features(const at::Tensor& input) override {
    at::Tensor x = proj_->forward(input);
    const int64_t h = x.size(2), w = x.size(3);
    at::Tensor pos =
        h == grid_h_ && w == grid_w_ ? pos_embed_ : resample_pos_embed(pos_embed_, prefix_, grid_h_, grid_w_, h, w);
    x = x.flatten(2).transpose(1, 2);
    at::Tensor cls = cls_token_.expand({x.size(0), -1, -1}).to(x.scalar_type());
    x = prefix_ == 0 ? torch::cat({cls, x + pos}, 1) : torch::cat({cls, x}, 1) + pos;
    for (auto& b : blocks_) x = run_stage(b, x);
    if (avg_) return run_norm(norm_, x.slice(1, 1).mean(1));
    return run_norm(norm_, x).select(1, 0);
  }

  at::Tensor fit_loaded(const std::string& name, const at::Tensor& file, const at::Tensor& model,
                        std::string& note) const override {
    if (name != "pos_embed" || file.dim() != 3 || file.size(0) != 1 || file.size(2) != model.size(2)) return {};
    const int64_t n = file.size(1) - prefix_;
    const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(std::max<int64_t>(n, 0)))));
    if (n <= 0 || side * side != n) return {};  // timm assumes the saved grid is square, and so do we
    note = "pos_embed " + std::to_string(side) + "x" + std::to_string(side) + " -> " + std::to_string(grid_h_) + "x" +
           std::to_string(grid_w_) + " patches (bicubic)";
    torch::NoGradGuard no_grad;
    return resample_pos_embed(file, prefix_, side, side, grid_h_, grid_w_);
  }

 private:
  // timm's init_weights (weight_init=''): pos_embed trunc_normal(.02), cls_token normal(1e-6), linears
  // trunc_normal(.02) with zero biases; the patch conv keeps PyTorch's default, as in timm.
  void init_weights() {
    torch::NoGradGuard no_grad;
    trunc_normal_(pos_embed_, 0.02);
    cls_token_.normal_(0.0, 1e-6);
    init_linear(*this);
  }
  static void init_linear(torch::nn::Module& m) {
    torch::NoGradGuard no_grad;
    for (auto& mod : m.modules(/*include_self=*/false))
      if (auto* l = mod->as<torch::nn::Linear>()) {
        trunc_normal_(l->weight, 0.02);
        if (l->bias.defined()) l->bias.zero_();
      }
  }

  int64_t prefix_, grid_h_ = 0, grid_w_ = 0;
  bool avg_;
  torch::nn::Conv2d proj_{nullptr};
  at::Tensor cls_token_, pos_embed_;
  std::vector<Block> blocks_;
  torch::nn::LayerNorm norm_{nullptr};
};

void add_vit(const std::string& name, const std::string& doc, const Arch& a) {
  model_registry().add(name, doc, "[model]\nname = \"" + name + "\"", config::Fields<ViTOptions>(),
                       [name, a](const ViTOptions&, const ModelContext& ctx) -> NetworkPtr {
                         return std::make_shared<VisionTransformer>(name, a, ctx);
                       });
}

// The published weights' resolutions of each architecture: one name each, as config.json's architecture says.
void add_sizes(const std::string& stem, const std::string& doc, const Arch& a, std::initializer_list<int> sizes) {
  for (int s : sizes)
    add_vit(stem + "_" + std::to_string(s), doc + "; weights trained at " + std::to_string(s) + " px", a);
}

const bool kVitRegistered = [] {
  const Arch tiny{16, 192, 12, 3}, small{16, 384, 12, 6}, base{16, 768, 12, 12}, large{16, 1024, 24, 16};
  const Arch base32{32, 768, 12, 12};
  add_sizes("vit_tiny_patch16", "ViT-Ti/16 (timm names; 5.7M parameters at 1000 classes)", tiny, {224, 384});
  add_sizes("vit_small_patch16", "ViT-S/16 (timm names; 22.1M parameters at 1000 classes)", small, {224, 384});
  add_sizes("vit_base_patch16", "ViT-B/16 (timm names; 86.6M parameters at 1000 classes)", base, {224, 384});
  add_sizes("vit_base_patch32", "ViT-B/32 (timm names; 88.2M parameters at 1000 classes)", base32, {224, 384});
  add_sizes("vit_large_patch16", "ViT-L/16 (timm names; 304.3M parameters at 1000 classes)", large, {224, 384});
  add_sizes("deit_tiny_patch16", "DeiT-Ti (timm names; 5.7M parameters at 1000 classes)", tiny, {224});
  add_sizes("deit_small_patch16", "DeiT-S (timm names; 22.1M parameters at 1000 classes)", small, {224});
  add_sizes("deit_base_patch16", "DeiT-B (timm names; 86.6M parameters at 1000 classes)", base, {224, 384});
  Arch small3 = small, base3 = base, large3 = large;
  small3.deit3 = base3.deit3 = large3.deit3 = true;
  add_sizes("deit3_small_patch16", "DeiT III-S: layer scale, no class-token position (timm names; 22.1M parameters)",
            small3, {224, 384});
  add_sizes("deit3_base_patch16", "DeiT III-B: layer scale, no class-token position (timm names; 86.6M parameters)",
            base3, {224, 384});
  add_sizes("deit3_large_patch16", "DeiT III-L: layer scale, no class-token position (timm names; 304.4M parameters)",
            large3, {224, 384});
  return true;
}();

}  // namespace
}  // namespace kg::model::vit
