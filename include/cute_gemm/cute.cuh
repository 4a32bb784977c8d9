// CuTe, as cute_gemm's kernels include it: <cute/tensor.hpp>, after a direct tuple_element
// for cute::tuples of up to four elements. NVRTC has no __type_pack_element, so cuda::std's
// general tuple_element goes through several alias layers per instantiation, and CuTe's
// layout algebra asks for thousands: the direct ones compile cute_pipelined's entry points
// 10-13 % faster, to the same cubins (docs/design/first_call.md#time-trace).
#pragma once

#include <cute/container/tuple.hpp>

namespace CUTE_STL_NAMESPACE {
// (more specialized than CuTe's tuple_element<I, cute::tuple<T...>>, which they stand in for)
template <class T0>
struct tuple_element<0, cute::tuple<T0>> { using type = T0; };
template <class T0, class T1>
struct tuple_element<0, cute::tuple<T0, T1>> { using type = T0; };
template <class T0, class T1>
struct tuple_element<1, cute::tuple<T0, T1>> { using type = T1; };
template <class T0, class T1, class T2>
struct tuple_element<0, cute::tuple<T0, T1, T2>> { using type = T0; };
template <class T0, class T1, class T2>
struct tuple_element<1, cute::tuple<T0, T1, T2>> { using type = T1; };
template <class T0, class T1, class T2>
struct tuple_element<2, cute::tuple<T0, T1, T2>> { using type = T2; };
template <class T0, class T1, class T2, class T3>
struct tuple_element<0, cute::tuple<T0, T1, T2, T3>> { using type = T0; };
template <class T0, class T1, class T2, class T3>
struct tuple_element<1, cute::tuple<T0, T1, T2, T3>> { using type = T1; };
template <class T0, class T1, class T2, class T3>
struct tuple_element<2, cute::tuple<T0, T1, T2, T3>> { using type = T2; };
template <class T0, class T1, class T2, class T3>
struct tuple_element<3, cute::tuple<T0, T1, T2, T3>> { using type = T3; };
}  // namespace CUTE_STL_NAMESPACE

#include <cute/tensor.hpp>
