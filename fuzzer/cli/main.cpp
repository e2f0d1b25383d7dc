// tcfuzz: a differential fuzzer for torch.compile. See README.md and docs/.
#include "fuzzer/cli/Driver.h"

int main(int argc, char** argv) { return tcfuzz::runDriver(argc, argv); }
