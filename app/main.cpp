#include "cli.h"

int main(int argc, char** argv) { return kg::app::run(argc, argv); }
