// tcfuzz: a differential fuzzer for torch.compile. See README.md.
#include "fuzzer/cli/Driver.h"

int main(int argc, char** argv) { return tcfuzz::runDriver(argc, argv); }
