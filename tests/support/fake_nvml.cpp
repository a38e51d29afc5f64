// A stand-in for libnvidia-ml.so.1 with the five functions kgtrain's NVML monitor loads: utilization
// alternates 40 % / 60 %, 2 GiB of 16 GiB in use. Built as a shared library for tests/device/test_nvml.cpp.
extern "C" {
struct FakeUtil {
  unsigned int gpu, memory;
};
struct FakeMem {
  unsigned long long total, free, used;
};
static int calls = 0;
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &calls;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void*, FakeUtil* u) {
  u->gpu = (calls++ % 2) ? 60 : 40;
  u->memory = 10;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void*, FakeMem* m) {
  m->total = 16ull << 30;
  m->used = 2ull << 30;
  m->free = m->total - m->used;
  return 0;
}
}
