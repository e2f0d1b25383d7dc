#pragma once
// The heavy headers most test files include, precompiled once for every test binary (CMakeLists.txt:
// target_precompile_headers). A test file still includes what it uses; this only makes it cheaper.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Tensor.h>
#include <boost/process.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
