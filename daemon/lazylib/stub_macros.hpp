// The stub bodies of a lazily loaded library (lazy_library.hpp): EPBROKERD_STUBn
// (ret, fn, T1..Tn) defines `ret fn(T1 a, ...)` forwarding to the real function.
// The including file defines EPBROKERD_REAL(fn) first: it declares `real`, the
// resolved function of its own library. Only for the lazylib sources.
#pragma once

#define EPBROKERD_STUB0(ret, fn) \
  ret fn(void) {                 \
    EPBROKERD_REAL(fn);          \
    return real();               \
  }
#define EPBROKERD_STUB1(ret, fn, T1) \
  ret fn(T1 a) {                     \
    EPBROKERD_REAL(fn);              \
    return real(a);                  \
  }
#define EPBROKERD_STUB2(ret, fn, T1, T2) \
  ret fn(T1 a, T2 b) {                   \
    EPBROKERD_REAL(fn);                  \
    return real(a, b);                   \
  }
#define EPBROKERD_STUB3(ret, fn, T1, T2, T3) \
  ret fn(T1 a, T2 b, T3 c) {                 \
    EPBROKERD_REAL(fn);                      \
    return real(a, b, c);                    \
  }
#define EPBROKERD_STUB4(ret, fn, T1, T2, T3, T4) \
  ret fn(T1 a, T2 b, T3 c, T4 d) {               \
    EPBROKERD_REAL(fn);                          \
    return real(a, b, c, d);                     \
  }
#define EPBROKERD_STUB5(ret, fn, T1, T2, T3, T4, T5) \
  ret fn(T1 a, T2 b, T3 c, T4 d, T5 e) {             \
    EPBROKERD_REAL(fn);                              \
    return real(a, b, c, d, e);                      \
  }
#define EPBROKERD_STUB7(ret, fn, T1, T2, T3, T4, T5, T6, T7) \
  ret fn(T1 a, T2 b, T3 c, T4 d, T5 e, T6 f, T7 g) {         \
    EPBROKERD_REAL(fn);                                      \
    return real(a, b, c, d, e, f, g);                        \
  }
