package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat. It
// is 100 on every architecture Linux and Go share; Go cannot ask sysconf
// without cgo.
const clockTicks = 100

// Role names in Result's maps: the supervisor and the roles it runs.
const (
	roleSupervisor = "supervisor"
	roleConsumer   = "consumer"
	roleUploader   = "uploader"
	roleCommitter  = "committer"
	roleMaintainer = "maintainer"
)

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	ppid int
	// cpu is the process's own utime+stime; children the cutime+cstime of
	// the children it has waited for.
	cpu, children time.Duration
}

// parseStat parses the content of /proc/<pid>/stat. The command name, in
// parentheses, may hold spaces and parentheses itself, so the fields are
// counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("no ')' in stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state) of proc(5): ppid is field 4, utime 14,
	// stime 15, cutime 16, cstime 17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat has %d fields after the name", len(f))
	}
	var v [5]int64
	for k, idx := range []int{1, 11, 12, 13, 14} {
		n, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", idx+3, err)
		}
		v[k] = n
	}
	tick := time.Second / clockTicks
	return procStat{
		ppid:     int(v[0]),
		cpu:      time.Duration(v[1]+v[2]) * tick,
		children: time.Duration(v[3]+v[4]) * tick,
	}, nil
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseHWM returns VmHWM, the peak resident set size, from the content of
// /proc/<pid>/status, in bytes.
func parseHWM(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM line %q: %w", line, err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmHWM in status")
}

func readHWM(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	return parseHWM(b)
}

// childRole returns the role of one of the supervisor's children from its
// command line, `ingestor <role> --config FILE`, or "" for another process.
func childRole(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return ""
	}
	args := strings.Split(string(b), "\x00")
	if len(args) < 2 {
		return ""
	}
	switch args[1] {
	case roleConsumer, roleUploader, roleCommitter, roleMaintainer:
		return args[1]
	}
	return ""
}

// tree samples the CPU time and peak RSS of the supervisor and its
// children. A child's figures are those of its last sample before it
// exited; its CPU time also reaches the supervisor's cutime+cstime once the
// supervisor has waited for it.
type tree struct {
	root int

	mu      sync.Mutex
	peak    map[string]int64 // role -> highest VmHWM seen
	cpu     map[int]pidCPU   // pid -> its last CPU time
	rootCPU time.Duration    // the supervisor's own, last sample
	// base and rootBase are the CPU times at mark, which cpuByRole
	// subtracts.
	base     map[int]time.Duration
	rootBase time.Duration
}

type pidCPU struct {
	role string
	cpu  time.Duration
}

func newTree(root int) *tree {
	return &tree{root: root, peak: map[string]int64{}, cpu: map[int]pidCPU{}, base: map[int]time.Duration{}}
}

// sample reads the supervisor and its children once and returns the CPU
// time of the whole tree: the supervisor's own, that of the children it
// has waited for, and that of the children alive now.
func (t *tree) sample() (time.Duration, error) {
	st, err := readStat(t.root)
	if err != nil {
		return 0, fmt.Errorf("read supervisor stat: %w", err)
	}
	total := st.cpu + st.children
	hwm, _ := readHWM(t.root)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("list /proc: %w", err)
	}
	type child struct {
		pid  int
		cpu  time.Duration
		role string
		hwm  int64
	}
	var kids []child
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == t.root {
			continue
		}
		cs, err := readStat(pid)
		if err != nil || cs.ppid != t.root {
			continue // gone, or not ours
		}
		role := childRole(pid)
		if role == "" {
			continue
		}
		h, _ := readHWM(pid) // a zombie has no VmHWM: keep the last one seen
		kids = append(kids, child{pid: pid, cpu: cs.cpu, role: role, hwm: h})
		total += cs.cpu
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.rootCPU = st.cpu
	t.peak[roleSupervisor] = max(t.peak[roleSupervisor], hwm)
	for _, k := range kids {
		t.peak[k.role] = max(t.peak[k.role], k.hwm)
		t.cpu[k.pid] = pidCPU{role: k.role, cpu: k.cpu}
	}
	return total, nil
}

// mark samples the tree and makes the CPU times of now the zero of
// cpuByRole; it returns the total, as sample does.
func (t *tree) mark() (time.Duration, error) {
	total, err := t.sample()
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rootBase = t.rootCPU
	for pid, p := range t.cpu {
		t.base[pid] = p.cpu
	}
	return total, nil
}

// watch samples every period until ctx ends or the supervisor is gone.
func (t *tree) watch(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := t.sample(); err != nil {
			return // the supervisor exited
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// peaks returns the highest VmHWM seen of each role.
func (t *tree) peaks() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int64{}
	for r, v := range t.peak {
		out[r] = v
	}
	return out
}

// cpuByRole returns the CPU time of each role between mark and its last
// sample, summed over its processes (a restarted child is a second
// process).
func (t *tree) cpuByRole() map[string]time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]time.Duration{roleSupervisor: t.rootCPU - t.rootBase}
	for pid, p := range t.cpu {
		out[p.role] += p.cpu - t.base[pid]
	}
	return out
}
