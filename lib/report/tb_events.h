// TensorBoard event files, written without TensorFlow or protobuf: TFRecord framing (length, masked
// CRC-32C of the length, payload, masked CRC-32C of the payload) around hand-encoded `Event` protos
// (tensorboard/compat/proto/event.proto, summary.proto; the hparams plugin's plugin_data.proto): the
// subset TensorBoard reads for scalars, images, hparams and restarts.
//
// An event file is a stream that TensorBoard tails while it grows, so it is appended to and flushed,
// not written atomically: a reader stops at an incomplete last record and picks it up once complete.
// Each EventWriter makes a new file (TensorBoard's naming), so a resumed run adds a file beside the
// old one and marks the restart (session_start) for TensorBoard to drop the superseded steps.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <variant>

namespace kg::report {

// TFRecord framing of one record.
std::string tfrecord(const std::string& payload);

// Serialized Event protos (exposed for the golden-file tests). wall_time in seconds since the epoch.
std::string event_file_version(double wall_time);
std::string event_scalar(const std::string& tag, int64_t step, float value, double wall_time);
// `png`: an encoded PNG of height x width pixels with `channels` (1 gray, 3 RGB, 4 RGBA).
std::string event_image(const std::string& tag, int64_t step, const std::string& png, int height, int width,
                        int channels, double wall_time);
// Height, width and channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) from a PNG's IHDR; false when `png` is
// not a PNG.
bool png_size(const std::string& png, int& height, int& width, int& channels);
// SessionLog START at `step`: TensorBoard's reader discards earlier-written events with a larger step.
std::string event_session_start(int64_t step, double wall_time);

// Hyperparameter values as the HParams tab shows them.
using HParam = std::variant<double, std::string, bool>;
// The hparams plugin's session_start_info (the run's hyperparameters) and session_end_info.
std::string event_hparams_start(const std::map<std::string, HParam>& hparams, const std::string& group,
                                double start_time, double wall_time);
enum class SessionStatus { success = 1, failure = 2, running = 3 };
std::string event_hparams_end(SessionStatus status, double end_time, double wall_time);

class EventWriter {
 public:
  // Creates dir (and parents) and dir/events.out.tfevents.<seconds>.<host>.<pid>.<n>, then writes the
  // file_version event. DataError naming the file when it cannot.
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  const std::string& path() const { return path_; }
  // Appends one serialized Event (event_*()), buffered; DataError naming the file on a write error.
  void write(const std::string& event);
  // Hands what is buffered to the OS with write(2) (TensorBoard sees everything written so far); DataError naming
  // the file on failure. Plain write(2), not stdio, so a failing disk (tests/support/fault_inject.cpp) reaches it.
  void flush();

 private:
  std::string path_;
  int fd_ = -1;
  std::string pending_;
};

// Seconds since the Unix epoch, with sub-second resolution.
double wall_time_now();

}  // namespace kg::report
