//! The operation sequence of a stateful target: the operations an input
//! encodes, decoded one by one.

use arbitrary::{Arbitrary, Unstructured};

/// Decodes operations of type `T` from `u` until the input ends, one
/// fails to decode, or `max` have been taken.
pub struct Ops<'u, 'a, T> {
    u: &'u mut Unstructured<'a>,
    max: usize,
    taken: usize,
    _op: std::marker::PhantomData<T>,
}

impl<'u, 'a, T: Arbitrary<'a>> Ops<'u, 'a, T> {
    /// At most `max` operations from `u`.
    pub fn new(u: &'u mut Unstructured<'a>, max: usize) -> Self {
        Self {
            u,
            max,
            taken: 0,
            _op: std::marker::PhantomData,
        }
    }

    /// How many operations were handed out.
    pub fn taken(&self) -> usize {
        self.taken
    }
}

impl<'a, T: Arbitrary<'a>> Iterator for Ops<'_, 'a, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.taken >= self.max || self.u.is_empty() {
            return None;
        }
        let op = T::arbitrary(self.u).ok()?;
        self.taken += 1;
        Some(op)
    }
}
