package decode

// node is one object level of the plain paths of a Decoder. At a node with
// captures the whole value is built and each capture's column takes
// evalPath(rest, value); otherwise the parser descends into the object
// through children and skips every other key without building its value.
type node struct {
	// children is the trie while it is built; freeze turns it into keys,
	// the table the reader looks object keys up in.
	children map[string]*node
	keys     keyTable
	captures []capture
	// slots lists the columns at or below this node, which a duplicate key
	// resets: as in encoding/json, the last occurrence of a key wins whole.
	slots []int
	// direct is set when the node's one capture is a whole column of a
	// primitive type (its path ends here) whose number fits the parser's
	// converted set: the reader then converts a string or number at once
	// instead of boxing the JSON value for Convert (parser.capture).
	direct *capture
}

type capture struct {
	col  int
	rest []pathSeg
	conv *converter
}

// buildTrie builds the trie of the plain paths of cols. A path descends
// through its leading field names; at its first index, or at its end, it
// captures. A node that captures for one path captures for every path
// through it, since its value is built anyway.
func buildTrie(cols []column) *node {
	root := &node{}
	for i := range cols {
		c := &cols[i]
		if c.path == nil {
			continue
		}
		n := root
		k := 0
		for k < len(c.path) && !c.path[k].isIndex {
			if n.children == nil {
				n.children = map[string]*node{}
			}
			child := n.children[c.path[k].key]
			if child == nil {
				child = &node{}
				n.children[c.path[k].key] = child
			}
			n = child
			k++
		}
		n.captures = append(n.captures, capture{col: i, rest: c.path[k:], conv: c.conv})
	}
	root.finish()
	root.freeze()
	return root
}

// freeze builds the key tables of n and the nodes below it and drops the
// maps they were built from: the reader only looks keys up.
func (n *node) freeze() {
	n.keys = newKeyTable(n.children)
	for _, child := range n.children {
		child.freeze()
	}
	n.children = nil
}

// finish folds the subtrees of capturing nodes into their captures and
// fills in slots.
func (n *node) finish() {
	if len(n.captures) > 0 && len(n.children) > 0 {
		n.captures = append(n.captures, n.flatten()...)
		n.children = nil
	}
	n.slots = n.slots[:0]
	for _, c := range n.captures {
		n.slots = append(n.slots, c.col)
	}
	n.direct = nil
	if len(n.captures) == 1 {
		if c := &n.captures[0]; len(c.rest) == 0 && c.col < maxConverted && c.conv.primitive() {
			n.direct = c
		}
	}
	for _, child := range n.children {
		child.finish()
		n.slots = append(n.slots, child.slots...)
	}
}

// flatten returns the captures below n with their paths made relative to n.
func (n *node) flatten() []capture {
	var out []capture
	for key, child := range n.children {
		for _, c := range child.captures {
			out = append(out, capture{col: c.col, rest: append([]pathSeg{{key: key}}, c.rest...), conv: c.conv})
		}
		for _, c := range child.flatten() {
			out = append(out, capture{col: c.col, rest: append([]pathSeg{{key: key}}, c.rest...), conv: c.conv})
		}
	}
	return out
}
