// train.adversarial: one more forward and backward per micro-batch, on perturbed weights, after the clean backward --
// the adversarial training Kaggle NLP write-ups credit. Both follow the public Kaggle code:
//   fgm  Fast Gradient Method (Miyato et al. 2017; Feedback Prize 2021): the parameters whose name contains
//        emb_name (the word embeddings) move by eps * grad / ||grad||; the adversarial loss's gradient is added to
//        the clean one.
//   awp  Adversarial Weight Perturbation (Wu et al. 2020; NBME, Feedback-ELL), the AWP class: every parameter whose
//        name contains `param` ("weight") and that has a gradient moves by lr * grad / (||grad|| + 1e-6) *
//        (||w|| + 1e-6), then is clamped to w +- eps * |w|; the micro-batch's clean gradient (of every parameter) is
//        replaced by the adversarial one (the class's optimizer.zero_grad(); with train.accum_steps the update's
//        earlier micro-batches keep theirs).
// The perturbation reads the gradients as they stand after the clean backward (with accumulation: the update's so
// far, as the public code does); a non-finite or zero gradient norm leaves that tensor unperturbed. The weights are
// put back from saved copies, bit for bit. Scale-free, so fp16's loss scale changes nothing.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "model/model.h"
#include "train/options.h"

namespace kg::train {

struct AdversarialOptions {
  std::string kind = "none";                 // none | fgm | awp
  int64_t start_epoch = 0;                   // attacks from this epoch on (0-based; the public code's start_epoch)
  double eps = 0;                            // fgm: epsilon (0 = 1.0); awp: adv_eps (0 = 0.2)
  double lr = 1.0;                           // awp: adv_lr
  std::string param = "weight";              // awp: adv_param, a substring of the perturbed parameters' names
  std::string emb_name = "word_embeddings";  // fgm: a substring of the embedding parameters' names
};
// The recipe's train.adversarial.* keys.
AdversarialOptions adversarial_options(const TrainOptions& t);

class Adversary {
 public:
  // The parameters it perturbs, picked by name from `net`; ConfigError naming the key when none matches.
  Adversary(const AdversarialOptions& o, model::Network& net);
  bool active(int64_t epoch) const { return epoch >= o_.start_epoch; }
  const std::string& kind() const { return o_.kind; }
  double eps() const { return eps_; }
  size_t tensors() const { return params_.size(); }

  // Before a micro-batch's clean backward (awp): the gradients the update has so far, kept to add back after the
  // adversarial backward; none for the update's first micro-batch.
  void before_clean_backward(bool first_of_update);
  // After it: perturb, run `adversarial_step` (forward and backward of the same micro-batch), restore.
  void attack(const std::function<void()>& adversarial_step);

 private:
  void perturb_fgm();
  void perturb_awp();

  AdversarialOptions o_;
  double eps_ = 0;
  std::vector<std::pair<std::string, at::Tensor>> params_;  // the perturbed ones
  std::vector<at::Tensor> all_;                             // every parameter (awp's zero_grad)
  std::vector<at::Tensor> saved_, earlier_grads_;
};

}  // namespace kg::train
