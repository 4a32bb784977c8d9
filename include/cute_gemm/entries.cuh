// Entry-point selection: compile only the extern "C" entry points a launch needs.
//
// A compile's cost is per instantiated entry point (template instantiation and NVVM; header
// parsing is a small part), so the runtime asks NVRTC for the entries one launch needs, not
// for all of a source's. Without CG_ENTRIES every entry point is compiled (the whole
// kernel). With CG_ENTRIES and CG_WANT_<entry> defined as 1 per wanted entry (in the
// prelude compile.read_source writes in front of the source), only those: an unselected
// definition is dropped by the preprocessor, so its body is never parsed and the templates
// it calls are never instantiated.
//
// Every entry point in kernels/ is defined in one of two spellings of the same test:
//   CG_ENTRY(NAME, ATTRS, (PARAMS), { body })  ->  extern "C" __global__ void ATTRS NAME(PARAMS) { body }
//                                                  or nothing; for entries written by macros
//   #if CG_ENTRY_ON(NAME) ... #endif           around a definition whose body holds directives
//                                                  (#pragma unroll), which a macro argument cannot
// (tests/test_entries.py checks that no extern "C" in kernels/ escapes both.)
#pragma once

#define CG_CAT_(a, b) a##b
#define CG_CAT(a, b) CG_CAT_(a, b)

// The preprocessor "probe" idiom: CG_WANT_NAME defined as 1 pastes to CG_PROBE_1, which
// expands to two arguments "~, 1", so CG_SECOND picks the 1; undefined, CG_WANT_NAME pastes
// to one unknown token and CG_SECOND picks the 0 after it. (The indirection through
// CG_SECOND lets the comma of the expansion split the arguments.) Usable in #if too.
#define CG_PROBE_1 ~, 1
#define CG_SECOND_(a, b, ...) b
#define CG_SECOND(...) CG_SECOND_(__VA_ARGS__)
#define CG_WANTED(NAME) CG_SECOND(CG_CAT(CG_PROBE_, CG_CAT(CG_WANT_, NAME)), 0, ~)

#ifdef CG_ENTRIES
#define CG_ENTRY_ON(NAME) CG_WANTED(NAME)
#else
#define CG_ENTRY_ON(NAME) 1
#endif

#define CG_KEEP_1(...) __VA_ARGS__
#define CG_KEEP_0(...)
#define CG_ENTRY(NAME, ATTRS, PARAMS, ...) \
  CG_CAT(CG_KEEP_, CG_ENTRY_ON(NAME))(extern "C" __global__ void ATTRS NAME PARAMS __VA_ARGS__)
