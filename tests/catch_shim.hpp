// One include for Catch2 v2 (single header, e.g. Debian 12's 2.13) and v3
// (library, e.g. Ubuntu 24.04's 3.4). The tests use only the macros both share.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#define LAB_CATCH_MAJOR 3
#include <catch2/catch_test_macros.hpp>
#else
#define LAB_CATCH_MAJOR 2
#include <catch2/catch.hpp>
#endif
