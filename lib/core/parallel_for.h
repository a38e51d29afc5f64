// One way to fan work out over threads: every index of [0, n) once, handed out one at a time from a shared
// counter (items cost different amounts: an image that decodes slowly holds up one worker, not a chunk).
#pragma once
#include <cstddef>
#include <functional>

namespace kg {

// The workers parallel_for(n, threads, ...) runs: `threads` (0 = std::thread::hardware_concurrency()),
// capped by n, at least 1.
int parallel_workers(size_t n, int threads);

// Calls body(i, worker) once for every i in [0, n), worker in [0, parallel_workers(n, threads)); the calling
// thread is worker 0 and takes part, so one worker runs inline with no thread started. The first exception a
// body throws stops the handing out of indices; the workers still running finish their item and are joined,
// and that exception (the first, the others are dropped) is rethrown here. Negative `threads`: InternalError.
void parallel_for(size_t n, int threads, const std::function<void(size_t i, int worker)>& body);

}  // namespace kg
