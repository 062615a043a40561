package avrodec

import (
	"fmt"
	"strings"

	"github.com/twmb/avro"
)

// kind is the Avro type of a schema node, after named references are
// resolved.
type kind uint8

const (
	kNull kind = iota
	kBoolean
	kInt
	kLong
	kFloat
	kDouble
	kBytes
	kString
	kRecord
	kEnum
	kArray
	kMap
	kUnion
	kFixed
)

var kindNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string", "record", "enum", "array", "map", "union", "fixed"}

func (k kind) String() string { return kindNames[k] }

// Schema is a parsed Avro writer schema. Named types referenced more than
// once, and recursive types, share one node, so the tree is a graph.
type Schema struct {
	root *node
}

// node is one Avro type.
type node struct {
	kind    kind
	logical string // logicalType, "" if none or not understood for the carrier
	name    string // full name of a record, enum or fixed

	fields   []field  // record
	symbols  []string // enum
	size     int      // fixed
	prec     int      // decimal precision
	scale    int      // decimal scale
	items    *node    // array
	values   *node    // map
	branches []*node  // union

	// zero is set when every value of the type takes no bytes (null, a
	// record of such fields, fixed[0]): a block of them is skipped without
	// a loop, whatever its count.
	zero bool
}

type field struct {
	name string
	typ  *node
}

func (n *node) String() string {
	switch {
	case n.name != "":
		return n.kind.String() + " " + n.name
	case n.logical != "":
		return n.kind.String() + "/" + n.logical
	}
	return n.kind.String()
}

// Parse parses the JSON text of an Avro schema. The text is validated by
// github.com/twmb/avro (names, defaults, logical type attributes); the
// binary decoding is this package's.
func Parse(schema string) (*Schema, error) {
	s, err := avro.Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("parse Avro schema: %w", err)
	}
	b := &builder{named: map[string]*node{}}
	root := b.node(s.Root(), "")
	if b.err != nil {
		return nil, fmt.Errorf("parse Avro schema: %w", b.err)
	}
	// A reference becomes a copy of its definition's node: the children
	// are pointers, so a recursive type still shares them.
	for _, r := range b.refs {
		*r.slot = *b.named[r.full]
	}
	markZero(root, map[*node]bool{})
	return &Schema{root: root}, nil
}

// String gives the Avro type of the schema's root.
func (s *Schema) String() string { return s.root.String() }

// builder turns twmb/avro's tree, where a named type is defined once and
// referenced by name afterwards, into nodes with the references resolved.
type builder struct {
	named map[string]*node
	// refs are resolved once every definition is known: a recursive type
	// refers to itself before its definition is complete.
	refs []ref
	err  error
}

type ref struct {
	slot *node
	full string
}

var primitives = map[string]kind{
	"null": kNull, "boolean": kBoolean, "int": kInt, "long": kLong, "float": kFloat,
	"double": kDouble, "bytes": kBytes, "string": kString,
}

// fullName applies the Avro naming rules: a dotted name is full, another
// takes the namespace given or, when none, the enclosing one.
func fullName(name, namespace, enclosing string) string {
	if strings.Contains(name, ".") {
		return name
	}
	if namespace == "" {
		namespace = enclosing
	}
	if namespace == "" {
		return name
	}
	return namespace + "." + name
}

func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}

// node converts one twmb/avro node; ns is the enclosing namespace.
func (b *builder) node(s *avro.SchemaNode, ns string) *node {
	n := &node{}
	switch s.Type {
	case "record", "error":
		n.kind = kRecord
		n.name = fullName(s.Name, s.Namespace, ns)
		b.named[n.name] = n
		inner := namespaceOf(n.name)
		for i := range s.Fields {
			f := &s.Fields[i]
			n.fields = append(n.fields, field{name: f.Name, typ: b.node(&f.Type, inner)})
		}
	case "enum":
		n.kind = kEnum
		n.name = fullName(s.Name, s.Namespace, ns)
		n.symbols = s.Symbols
		b.named[n.name] = n
	case "fixed":
		n.kind = kFixed
		n.name = fullName(s.Name, s.Namespace, ns)
		n.size = s.Size
		b.named[n.name] = n
	case "array":
		n.kind = kArray
		n.items = b.node(s.Items, ns)
	case "map":
		n.kind = kMap
		n.values = b.node(s.Values, ns)
	case "union":
		n.kind = kUnion
		for i := range s.Branches {
			n.branches = append(n.branches, b.node(&s.Branches[i], ns))
		}
	default:
		k, ok := primitives[s.Type]
		if !ok {
			// A reference to a named type: its full name, or its name in
			// the enclosing namespace, or in the null namespace.
			full := s.Type
			if !strings.Contains(full, ".") && ns != "" {
				if _, defined := b.named[ns+"."+full]; defined {
					full = ns + "." + full
				}
			}
			if _, defined := b.named[full]; !defined {
				if b.err == nil {
					b.err = fmt.Errorf("type %q is not defined", s.Type)
				}
				return n
			}
			b.refs = append(b.refs, ref{slot: n, full: full})
			return n
		}
		n.kind = k
	}
	n.logical = logicalFor(s, n)
	if n.logical == "decimal" {
		n.prec, n.scale = s.Precision, s.Scale
	}
	return n
}

// logicalFor keeps the logical types this package understands on the
// carriers the Avro specification allows them; any other is ignored, as
// the specification says, and the value reads as its carrier.
func logicalFor(s *avro.SchemaNode, n *node) string {
	l := s.LogicalType
	switch n.kind {
	case kInt:
		if l == "date" || l == "time-millis" {
			return l
		}
	case kLong:
		switch l {
		case "time-micros", "timestamp-millis", "timestamp-micros", "timestamp-nanos",
			"local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos":
			return l
		}
	case kString:
		if l == "uuid" {
			return l
		}
	case kBytes:
		if l == "decimal" && s.Precision > 0 {
			return l
		}
	case kFixed:
		if l == "decimal" && s.Precision > 0 {
			return l
		}
		if l == "uuid" && n.size == 16 {
			return l
		}
	}
	return ""
}

// markZero sets node.zero; seen guards recursive types, which are never
// zero (a recursive value needs a union or an array to end).
func markZero(n *node, seen map[*node]bool) bool {
	if seen[n] {
		return n.zero
	}
	seen[n] = true
	switch n.kind {
	case kNull:
		n.zero = true
	case kFixed:
		n.zero = n.size == 0
	case kRecord:
		z := true
		for _, f := range n.fields {
			if !markZero(f.typ, seen) {
				z = false
			}
		}
		n.zero = z
	case kArray:
		markZero(n.items, seen)
	case kMap:
		markZero(n.values, seen)
	case kUnion:
		for _, br := range n.branches {
			markZero(br, seen)
		}
	}
	return n.zero
}
