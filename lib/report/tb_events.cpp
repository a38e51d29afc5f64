#include "report/tb_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/crc32c.h"
#include "core/error.h"
#include "core/fs.h"

namespace kg::report {
namespace {

// Protobuf wire format: just the field kinds the protos above use.
class Proto {
 public:
  Proto& varint(int field, uint64_t v) {
    key(field, 0);
    raw_varint(v);
    return *this;
  }
  Proto& fixed64(int field, double v) {
    key(field, 1);
    char b[8];
    std::memcpy(b, &v, 8);  // little-endian hosts only (x86-64, aarch64)
    s_.append(b, 8);
    return *this;
  }
  Proto& fixed32(int field, float v) {
    key(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    s_.append(b, 4);
    return *this;
  }
  Proto& bytes(int field, const std::string& v) {
    key(field, 2);
    raw_varint(v.size());
    s_ += v;
    return *this;
  }
  // proto3 leaves fields at their default value out; these write them only when set.
  Proto& opt_varint(int field, uint64_t v) { return v ? varint(field, v) : *this; }
  Proto& opt_fixed64(int field, double v) { return v != 0 ? fixed64(field, v) : *this; }
  Proto& opt_bytes(int field, const std::string& v) { return v.empty() ? *this : bytes(field, v); }
  const std::string& str() const { return s_; }

 private:
  void key(int field, int wire) { raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire)); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      s_ += static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    s_ += static_cast<char>(v);
  }
  std::string s_;
};

// Event{wall_time = 1, step = 2, summary = 5} with Summary{value = 1}.
std::string summary_event(const std::string& value, int64_t step, double wall_time) {
  return Proto()
      .opt_fixed64(1, wall_time)
      .opt_varint(2, static_cast<uint64_t>(step))
      .bytes(5, Proto().bytes(1, value).str())
      .str();
}

// Summary.Value{tag = 1, metadata = 9} whose metadata names the hparams plugin (PluginData{plugin_name =
// 1, content = 2}); content is HParamsPluginData{version = 1, session_start_info = 3 | session_end_info = 4}.
std::string hparams_value(const std::string& tag, int data_field, const std::string& data) {
  const std::string content = Proto().bytes(data_field, data).str();
  const std::string plugin = Proto().bytes(1, "hparams").bytes(2, content).str();
  return Proto().bytes(1, tag).bytes(9, Proto().bytes(1, plugin).str()).str();
}

// google.protobuf.Value{number_value = 2, string_value = 3, bool_value = 4}: a oneof, always written.
std::string proto_value(const HParam& v) {
  if (auto* d = std::get_if<double>(&v)) return Proto().fixed64(2, *d).str();
  if (auto* s = std::get_if<std::string>(&v)) return Proto().bytes(3, *s).str();
  return Proto().varint(4, std::get<bool>(v) ? 1 : 0).str();
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

std::string tfrecord(const std::string& payload) {
  std::string len;
  const uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) len += static_cast<char>((n >> (8 * i)) & 0xFF);
  std::string out = len;
  put_u32(out, masked_crc32c(len));
  out += payload;
  put_u32(out, masked_crc32c(payload));
  return out;
}

std::string event_file_version(double wall_time) {
  return Proto().opt_fixed64(1, wall_time).bytes(3, "brain.Event:2").str();
}

std::string event_scalar(const std::string& tag, int64_t step, float value, double wall_time) {
  // Summary.Value{tag = 1, simple_value = 2}
  return summary_event(Proto().bytes(1, tag).fixed32(2, value).str(), step, wall_time);
}

std::string event_image(const std::string& tag, int64_t step, const std::string& png, int height, int width,
                        int channels, double wall_time) {
  // Summary.Image{height = 1, width = 2, colorspace = 3, encoded_image_string = 4}, in Summary.Value's field 4.
  const std::string image = Proto()
                                .opt_varint(1, static_cast<uint64_t>(height))
                                .opt_varint(2, static_cast<uint64_t>(width))
                                .opt_varint(3, static_cast<uint64_t>(channels))
                                .opt_bytes(4, png)
                                .str();
  return summary_event(Proto().bytes(1, tag).bytes(4, image).str(), step, wall_time);
}

bool png_size(const std::string& png, int& height, int& width, int& channels) {
  if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || png.compare(12, 4, "IHDR") != 0) return false;
  const auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  width = static_cast<int>(be32(16));
  height = static_cast<int>(be32(20));
  switch (static_cast<unsigned char>(png[25])) {
    case 0:
      channels = 1;
      break;
    case 4:
      channels = 2;
      break;
    case 6:
      channels = 4;
      break;
    default:
      channels = 3;  // 2 RGB, 3 palette
  }
  return true;
}

std::string event_session_start(int64_t step, double wall_time) {
  // Event{session_log = 7} with SessionLog{status = 1 (START)}.
  return Proto()
      .opt_fixed64(1, wall_time)
      .opt_varint(2, static_cast<uint64_t>(step))
      .bytes(7, Proto().varint(1, 1).str())
      .str();
}

std::string event_hparams_start(const std::map<std::string, HParam>& hparams, const std::string& group,
                                double start_time, double wall_time) {
  // SessionStartInfo{hparams = 1 (map entries {key = 1, value = 2}), group_name = 4, start_time_secs = 5}
  Proto info;
  for (auto& [k, v] : hparams) info.bytes(1, Proto().bytes(1, k).bytes(2, proto_value(v)).str());
  info.opt_bytes(4, group).opt_fixed64(5, start_time);
  return summary_event(hparams_value("_hparams_/session_start_info", 3, info.str()), 0, wall_time);
}

std::string event_hparams_end(SessionStatus status, double end_time, double wall_time) {
  // SessionEndInfo{status = 1, end_time_secs = 2}
  const std::string info = Proto().varint(1, static_cast<uint64_t>(status)).opt_fixed64(2, end_time).str();
  return summary_event(hparams_value("_hparams_/session_end_info", 4, info), 0, wall_time);
}

double wall_time_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(const std::string& dir) {
  static std::atomic<int> seq{0};
  make_directories(dir);
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const double now = wall_time_now();
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + host + "." +
          std::to_string(getpid()) + "." + std::to_string(seq++);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw DataError("cannot create the TensorBoard event file " + path_ + ": " + std::strerror(errno));
  write(event_file_version(now));
  flush();
}

EventWriter::~EventWriter() {
  try {
    flush();  // callers flush at every epoch's end and the run's: this is what an exception left behind
  } catch (const Error&) {
  }
  ::close(fd_);
}

void EventWriter::write(const std::string& event) {
  pending_ += tfrecord(event);
  if (pending_.size() >= (size_t{1} << 16)) flush();
}

void EventWriter::flush() {
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      pending_.erase(0, done);
      throw DataError("cannot write the TensorBoard event file " + path_ + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  pending_.clear();
}

}  // namespace kg::report
