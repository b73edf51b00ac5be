//! Packet buffers, reused: the runtime reads into a free slot and the engine passes its
//! index around. The pool grows only when every slot is in use (so after warm-up the hot
//! path never allocates) and never beyond `max_packets`.

use super::packet::PktId;

pub struct PacketPool {
    slot_size: usize,
    data: Vec<u8>,
    lens: Vec<u32>,
    free: Vec<PktId>,
    max_packets: usize,
}

impl PacketPool {
    pub fn new(slot_size: usize, initial: usize, max_packets: usize) -> Self {
        let mut p = PacketPool {
            slot_size,
            data: Vec::new(),
            lens: Vec::new(),
            free: Vec::new(),
            max_packets,
        };
        p.grow(initial.max(1));
        p
    }

    fn grow(&mut self, more: usize) {
        let old = self.lens.len();
        let new = (old + more).min(self.max_packets);
        self.data.resize(new * self.slot_size, 0);
        self.lens.resize(new, 0);
        self.free.reserve(new - old);
        self.free.extend((old as PktId..new as PktId).rev());
    }

    /// A free slot, or None when `max_packets` are all in use.
    pub fn alloc(&mut self) -> Option<PktId> {
        if self.free.is_empty() && self.lens.len() < self.max_packets {
            let n = self.lens.len();
            self.grow(n);
        }
        self.free.pop()
    }

    pub fn free(&mut self, id: PktId) {
        debug_assert!(!self.free.contains(&id), "double free of packet {id}");
        self.free.push(id);
    }

    /// The whole slot, for reading a packet into.
    pub fn slot_mut(&mut self, id: PktId) -> &mut [u8] {
        let s = id as usize * self.slot_size;
        &mut self.data[s..s + self.slot_size]
    }

    pub fn set_len(&mut self, id: PktId, len: usize) {
        self.lens[id as usize] = len as u32;
    }

    pub fn get_mut(&mut self, id: PktId) -> &mut [u8] {
        let s = id as usize * self.slot_size;
        &mut self.data[s..s + self.lens[id as usize] as usize]
    }

    pub fn get(&self, id: PktId) -> &[u8] {
        let s = id as usize * self.slot_size;
        &self.data[s..s + self.lens[id as usize] as usize]
    }

    /// Copies a packet into a new slot (duplication).
    pub fn clone_packet(&mut self, id: PktId) -> Option<PktId> {
        let new = self.alloc()?;
        let len = self.lens[id as usize] as usize;
        let (a, b) = (id as usize * self.slot_size, new as usize * self.slot_size);
        self.data.copy_within(a..a + len, b);
        self.lens[new as usize] = len as u32;
        Some(new)
    }

    pub fn in_use(&self) -> usize {
        self.lens.len() - self.free.len()
    }

    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    pub fn slot_size(&self) -> usize {
        self.slot_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_slots_and_respects_the_cap() {
        let mut p = PacketPool::new(64, 2, 4);
        let a = p.alloc().unwrap();
        p.slot_mut(a)[..3].copy_from_slice(b"abc");
        p.set_len(a, 3);
        let b = p.clone_packet(a).unwrap();
        assert_eq!(p.get(b), b"abc");
        let _c = p.alloc().unwrap();
        let _d = p.alloc().unwrap();
        assert_eq!(p.capacity(), 4);
        assert!(p.alloc().is_none(), "never beyond max_packets");
        p.free(a);
        assert_eq!(p.alloc(), Some(a));
        assert_eq!(p.in_use(), 4);
    }
}
