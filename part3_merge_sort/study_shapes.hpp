// The launch shapes of the Q7 study, listed once: as types here, so that a
// shape can become template arguments (withShape, launch_support.cuh), and as
// values through studyShapes() (shapes.cpp) for the graders and the demo.
#pragma once

#include <tuple>

namespace lab {

template <int THREADS, int ITEMS>
struct Shape {
    static constexpr int threads = THREADS;
    static constexpr int items = ITEMS;
};

using StudyShapes = std::tuple<Shape<128, 4>, Shape<128, 8>, Shape<128, 17>, Shape<256, 8>, Shape<256, 16>,
                               Shape<256, 17>, Shape<512, 17>>;

}  // namespace lab
