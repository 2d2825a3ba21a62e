//! The table of a port's clients: a slab whose ids carry a generation, so
//! an id of a client that has gone never reaches a newer client that
//! reuses its slot.

use std::collections::VecDeque;

use super::PortEvent;

/// A client of a port (an agent, a tool, ...), as handed out by
/// [`PortCore::register`](super::PortCore::register).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId {
    index: u32,
    generation: u32,
}

impl std::fmt::Display for ClientId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client {}.{}", self.index, self.generation)
    }
}

/// What the port keeps per client.
#[derive(Debug, Default)]
pub(super) struct Client {
    /// Events not yet taken by `poll_client`.
    pub(super) events: VecDeque<PortEvent>,
    /// Sends accepted and not yet completed (posted or queued).
    pub(super) outstanding: usize,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    client: Option<Client>,
}

#[derive(Debug, Default)]
pub(super) struct Clients {
    slots: Vec<Slot>,
    free: Vec<u32>,
    len: usize,
}

impl Clients {
    pub(super) fn insert(&mut self) -> ClientId {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            if let Some(slot) = self.slots.get_mut(index as usize) {
                slot.generation = slot.generation.wrapping_add(1);
                slot.client = Some(Client::default());
                return ClientId {
                    index,
                    generation: slot.generation,
                };
            }
        }
        let index = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        self.slots.push(Slot {
            generation: 0,
            client: Some(Client::default()),
        });
        ClientId {
            index,
            generation: 0,
        }
    }

    pub(super) fn remove(&mut self, id: ClientId) -> Option<Client> {
        let slot = self.slots.get_mut(id.index as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        let c = slot.client.take()?;
        self.free.push(id.index);
        self.len -= 1;
        Some(c)
    }

    #[inline]
    pub(super) fn get(&self, id: ClientId) -> Option<&Client> {
        let slot = self.slots.get(id.index as usize)?;
        (slot.generation == id.generation).then_some(slot.client.as_ref())?
    }

    #[inline]
    pub(super) fn get_mut(&mut self, id: ClientId) -> Option<&mut Client> {
        let slot = self.slots.get_mut(id.index as usize)?;
        (slot.generation == id.generation).then_some(slot.client.as_mut())?
    }

    #[inline]
    pub(super) fn contains(&self, id: ClientId) -> bool {
        self.get(id).is_some()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Ids of every client, in slot order.
    pub(super) fn ids(&self) -> Vec<ClientId> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.client.is_some())
            .map(|(i, s)| ClientId {
                index: u32::try_from(i).unwrap_or(u32::MAX),
                generation: s.generation,
            })
            .collect()
    }

    /// Every client, mutably.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Client> {
        self.slots.iter_mut().filter_map(|s| s.client.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_slot_does_not_answer_to_the_old_id() {
        let mut c = Clients::default();
        let a = c.insert();
        let b = c.insert();
        assert!(c.remove(a).is_some());
        assert!(c.remove(a).is_none(), "removed twice");
        let a2 = c.insert();
        assert_ne!(a, a2);
        assert!(!c.contains(a) && c.contains(a2) && c.contains(b));
        assert_eq!(c.len(), 2);
        assert_eq!(c.ids(), vec![a2, b]);
    }
}
