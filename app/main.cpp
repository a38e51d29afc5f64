#include "cli.h"
#include "core/host_memory.h"

int main(int argc, char** argv) {
  kg::keep_freed_host_memory();  // before the first allocation of a training step
  return kg::app::run(argc, argv);
}
