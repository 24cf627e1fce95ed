//! Compact forms of two standard types, for the state every endpoint carries (two per
//! flow; docs/performance.md, "Memory per flow").
//!
//! - `Opt64`: an `Option` of a 64-bit value in 8 bytes instead of 16. `Option<u64>` and
//!   `Option<Instant>` need a word for the tag; `Opt64` stores value + 1 in a `NonZeroU64`,
//!   so zero stands for `None`: exact for every value below `u64::MAX` (585 years in
//!   nanoseconds, 16 EiB of offsets).
//! - `LazyVec`: a `Vec` that most endpoints leave empty, in 8 bytes instead of 24: boxed
//!   at the first push, and freed again on `free_if_empty`.

use smallpipe_core::Instant;
use std::marker::PhantomData;
use std::num::NonZeroU64;

/// A value `Opt64` can hold: one 64-bit word.
pub trait Word: Copy {
    fn to_word(self) -> u64;
    fn from_word(w: u64) -> Self;
}

impl Word for u64 {
    fn to_word(self) -> u64 {
        self
    }
    fn from_word(w: u64) -> Self {
        w
    }
}

impl Word for Instant {
    fn to_word(self) -> u64 {
        self.as_nanos()
    }
    fn from_word(w: u64) -> Self {
        Instant(w)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Opt64<T> {
    plus_one: Option<NonZeroU64>,
    of: PhantomData<T>,
}

impl<T: Word> Opt64<T> {
    pub const NONE: Self = Opt64 { plus_one: None, of: PhantomData };

    /// Panics on `u64::MAX`, the one value it cannot hold.
    pub fn some(v: T) -> Self {
        let plus_one = v.to_word().checked_add(1).expect("Opt64 holds values below u64::MAX");
        Opt64 { plus_one: NonZeroU64::new(plus_one), of: PhantomData }
    }

    pub fn get(self) -> Option<T> {
        self.plus_one.map(|w| T::from_word(w.get() - 1))
    }

    pub fn take(&mut self) -> Option<T> {
        std::mem::replace(self, Self::NONE).get()
    }

    /// Sets `v` unless a value is there already (as `Option::get_or_insert`).
    pub fn get_or_insert(&mut self, v: T) -> T {
        if self.plus_one.is_none() {
            *self = Self::some(v);
        }
        self.get().unwrap()
    }
}

impl<T: Word + std::fmt::Debug> std::fmt::Debug for Opt64<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

#[derive(Clone)]
pub struct LazyVec<T> {
    // The box is the point: one word in the endpoint instead of a `Vec`'s three.
    #[allow(clippy::box_collection)]
    boxed: Option<Box<Vec<T>>>,
}

// By hand: the derive would ask `T: Default`, which an empty vector does not need.
impl<T> Default for LazyVec<T> {
    fn default() -> Self {
        LazyVec { boxed: None }
    }
}

impl<T> LazyVec<T> {
    pub fn as_slice(&self) -> &[T] {
        self.boxed.as_deref().map_or(&[], Vec::as_slice)
    }
    /// The vector to change, boxed now if it was not.
    pub fn vec_mut(&mut self) -> &mut Vec<T> {
        self.boxed.get_or_insert_default()
    }
    /// The vector to change if there is one (an empty one stays unboxed).
    pub fn existing_mut(&mut self) -> Option<&mut Vec<T>> {
        self.boxed.as_deref_mut()
    }
    /// Frees the box once the vector is empty again, so state that comes and goes (a
    /// hole in the sequence space) takes memory only while it lasts.
    pub fn free_if_empty(&mut self) {
        if self.is_empty() {
            self.boxed = None;
        }
    }
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }
    pub fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }
}

impl<'a, T> IntoIterator for &'a LazyVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for LazyVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}
