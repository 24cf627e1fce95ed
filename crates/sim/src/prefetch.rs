//! A software prefetch: a hint that the caller will soon read `value`, so that the cache
//! line holding it is loaded while other work goes on. It changes no result, only when
//! memory is read; `safe_arch` gives the instruction without `unsafe` here.

/// Starts loading the cache line that holds `value` into every cache level.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    safe_arch::prefetch_t0(value);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
