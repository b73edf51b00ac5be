package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The limits of dclab/endpoints/base.py (MAX_CONNECTIONS, MAX_OBJECTS).
const (
	maxConnections = 64
	maxObjects     = 10_000
)

// workload is dclab.endpoints.base.Workload, read from its to_dict() JSON form.
type workload struct {
	Objects    []int64
	Conns      int
	Assignment []int // nil: round robin
	Streams    string
	Resumption bool
	ZeroRTT    bool
	CCOptions  []map[string]any
	Ranged     bool
	Preconnect bool
}

// connectionOf is the connection object i goes on.
func (w *workload) connectionOf(i int) int {
	if w.Assignment != nil {
		return w.Assignment[i]
	}
	return i % w.Conns
}

func (w *workload) total() int64 {
	var t int64
	for _, s := range w.Objects {
		t += s
	}
	return t
}

// byteRanges is each object's (first, last) when ranged (Workload.byte_ranges).
func (w *workload) byteRanges() []*[2]int64 {
	out := make([]*[2]int64, len(w.Objects))
	var first int64
	for i, s := range w.Objects {
		if w.Ranged && s > 0 {
			out[i] = &[2]int64{first, first + s - 1}
		}
		first += s
	}
	return out
}

// loadWorkload reads a workload file; the error says what is wrong (Workload.from_dict
// and Workload.errors, whose messages it follows).
func loadWorkload(path string) (*workload, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("--workload: not a JSON object: %w", err)
	}
	if fields == nil {
		return nil, errors.New("workload: must be a JSON object")
	}
	known := []string{"assignment", "cc_options", "connections", "objects", "preconnect", "ranged", "resumption", "streams", "zero_rtt"}
	var unknown []string
	for k := range fields {
		if !contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("workload: unknown keys %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	w := &workload{Objects: []int64{100_000_000}, Conns: 1, Streams: "parallel"}
	var wrong []string
	typeErr := func(key, want string, v any) {
		wrong = append(wrong, fmt.Sprintf("%s: must be %s (got %s)", key, want, jsonType(v)))
	}
	if v, ok := fields["connections"]; ok {
		if n, isInt := jsonInt(v); isInt {
			w.Conns = int(max(min(n, 1<<30), -1))
		} else {
			typeErr("connections", "int", v)
		}
	}
	if v, ok := fields["objects"]; ok {
		list, isList := v.([]any)
		if !isList {
			typeErr("objects", "tuple", v)
		} else {
			w.Objects = make([]int64, len(list))
			for i, s := range list {
				n, isInt := jsonInt(s)
				if !isInt || n < 0 {
					wrong = append(wrong, "objects: sizes must be whole numbers of bytes >= 0")
					break
				}
				w.Objects[i] = n
			}
		}
	}
	if v, ok := fields["assignment"]; ok && v != nil {
		list, isList := v.([]any)
		if !isList {
			wrong = append(wrong, fmt.Sprintf("assignment: must be a tuple or None (got %s)", jsonType(v)))
		} else {
			w.Assignment = make([]int, len(list))
			for i, c := range list {
				n, isInt := jsonInt(c)
				if !isInt {
					n = -1 // reported below as out of range
				}
				w.Assignment[i] = int(max(min(n, 1<<30), -1))
			}
		}
	}
	if v, ok := fields["streams"]; ok {
		if s, isStr := v.(string); isStr {
			w.Streams = s
		} else {
			typeErr("streams", "str", v)
		}
	}
	for key, dst := range map[string]*bool{"resumption": &w.Resumption, "zero_rtt": &w.ZeroRTT, "ranged": &w.Ranged, "preconnect": &w.Preconnect} {
		if v, ok := fields[key]; ok {
			if b, isBool := v.(bool); isBool {
				*dst = b
			} else {
				typeErr(key, "bool", v)
			}
		}
	}
	if v, ok := fields["cc_options"]; ok {
		list, isList := v.([]any)
		if !isList {
			typeErr("cc_options", "tuple", v)
		} else {
			for _, o := range list {
				m, isMap := o.(map[string]any)
				if !isMap {
					wrong = append(wrong, "cc_options: each entry must be an object of knob names to values")
					break
				}
				w.CCOptions = append(w.CCOptions, m)
			}
		}
	}
	sort.Strings(wrong)
	if len(wrong) > 0 {
		return nil, errors.New("workload: " + strings.Join(wrong, "; "))
	}
	if errs := w.errors(); len(errs) > 0 {
		return nil, errors.New("workload: " + strings.Join(errs, "; "))
	}
	return w, nil
}

// errors is Workload.errors() for a workload of the right types.
func (w *workload) errors() []string {
	var errs []string
	connsOK := w.Conns >= 1 && w.Conns <= maxConnections
	if !connsOK {
		errs = append(errs, fmt.Sprintf("connections: must be 1 to %d (got %d)", maxConnections, w.Conns))
	}
	if len(w.Objects) < 1 || len(w.Objects) > maxObjects {
		errs = append(errs, fmt.Sprintf("objects: must be 1 to %d (got %d)", maxObjects, len(w.Objects)))
	}
	assignmentOK := true
	if w.Assignment != nil {
		if len(w.Assignment) != len(w.Objects) {
			errs = append(errs, fmt.Sprintf("assignment: needs one connection per object (%d), got %d", len(w.Objects), len(w.Assignment)))
			assignmentOK = false
		} else {
			for _, c := range w.Assignment {
				if c < 0 || c >= w.Conns {
					errs = append(errs, fmt.Sprintf("assignment: connection numbers must be 0 to %d", w.Conns-1))
					assignmentOK = false
					break
				}
			}
		}
	}
	if assignmentOK && len(w.Objects) > 0 && connsOK {
		used := make([]bool, w.Conns)
		for i := range w.Objects {
			used[w.connectionOf(i)] = true
		}
		var idle []string
		for c, u := range used {
			if !u && len(idle) < 5 {
				idle = append(idle, strconv.Itoa(c))
			}
		}
		if len(idle) > 0 {
			errs = append(errs, "connections: every connection needs an object (none on "+strings.Join(idle, ", ")+")")
		}
	}
	if w.Streams != "parallel" && w.Streams != "sequential" {
		errs = append(errs, fmt.Sprintf("streams: must be parallel or sequential (got %q)", w.Streams))
	}
	if len(w.CCOptions) > 0 && len(w.CCOptions) != w.Conns {
		errs = append(errs, fmt.Sprintf("cc_options: needs one entry per connection (%d), got %d", w.Conns, len(w.CCOptions)))
	}
	if w.ZeroRTT && !w.Resumption {
		errs = append(errs, "zero_rtt: needs resumption (0-RTT resumes an earlier session)")
	}
	if w.Ranged {
		var empty []string
		for i, s := range w.Objects {
			if s < 1 && len(empty) < 5 {
				empty = append(empty, strconv.Itoa(i))
			}
		}
		if len(empty) > 0 {
			errs = append(errs, "ranged: every range needs at least 1 byte (not object "+strings.Join(empty, ", ")+")")
		}
	}
	if w.Preconnect && w.ZeroRTT {
		errs = append(errs, "preconnect: not with zero_rtt (0-RTT exists to overlap the handshake)")
	}
	return errs
}

// refusals is what this client does not implement of a valid workload.
func (w *workload) refusals() []string {
	var out []string
	if w.Resumption {
		out = append(out, "resumption: not implemented by the quic-go client")
	}
	if w.ZeroRTT {
		out = append(out, "zero_rtt: not implemented by the quic-go client")
	}
	for _, o := range w.CCOptions {
		if len(o) > 0 {
			out = append(out, "cc_options: quic-go has no congestion control options")
			break
		}
	}
	return out
}

// jsonInt is a JSON number that is a whole number written without a fraction or exponent
// (what Python reads as an int).
func jsonInt(v any) (int64, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(num.String(), 10, 64)
	return n, err == nil
}

// jsonType names a JSON value's type as Python would (for messages like Workload.errors').
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return "int"
		}
		return "float"
	}
	return fmt.Sprintf("%T", v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
