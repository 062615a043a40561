package decode

import "math/bits"

// keyTable is the frozen set of the mapped keys of one trie node, an
// open-addressed hash table with linear probing, built once per Decoder.
// The reader looks up every key of every object it visits, mapped or not,
// so a lookup must be cheap above all when the key is absent: it hashes
// the key's bytes as read (no allocation, no copy) and stops at the first
// empty slot, which a table at most half full reaches within a few slots.
// Go's map did the same work with a general hash and its own bookkeeping,
// and was the largest part of the visit after the parsing itself on wide
// events.
type keyTable struct {
	slots []keySlot // a power of two long; nil when the node has no children
}

// keySlot is one entry; an empty slot has a nil child.
type keySlot struct {
	hash  uint64
	key   string
	child *node
}

// newKeyTable builds the table of children (nil or empty: an empty
// table).
func newKeyTable(children map[string]*node) keyTable {
	if len(children) == 0 {
		return keyTable{}
	}
	size := 1 << bits.Len(uint(2*len(children)-1)) // at least twice the keys
	t := keyTable{slots: make([]keySlot, size)}
	mask := uint64(size - 1)
	for key, child := range children {
		h := hashKey(key)
		i := h & mask
		for t.slots[i].child != nil {
			i = (i + 1) & mask
		}
		t.slots[i] = keySlot{hash: h, key: key, child: child}
	}
	return t
}

// find returns the child under key, or nil when no mapped path goes
// through key.
func (t *keyTable) find(key string) *node {
	if len(t.slots) == 0 {
		return nil
	}
	h := hashKey(key)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.child == nil {
			return nil
		}
		if s.hash == h && s.key == key {
			return s.child
		}
	}
}

// hashKey hashes all the bytes of a key, eight at a time; keys are field
// names, mostly 4 to 30 bytes. Collisions cost a probe, never a wrong
// answer: find compares the keys themselves.
func hashKey(s string) uint64 {
	const m = 0x9E3779B97F4A7C15 // 2^64 / golden ratio, odd
	h := uint64(len(s)) * m
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = bits.RotateLeft64((h^w)*m, 31)
		s = s[8:]
	}
	if len(s) > 0 {
		var w uint64
		for i := 0; i < len(s); i++ {
			w |= uint64(s[i]) << (8 * i)
		}
		h = bits.RotateLeft64((h^w)*m, 31)
	}
	h ^= h >> 29
	h *= m
	return h ^ h>>32
}
