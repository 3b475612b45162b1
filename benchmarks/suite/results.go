package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Raw results files: each generated section of PERF.md has one per mode
// (quick, full) in the results directory, named "<kind>-<mode>.json".
const (
	KindCore       = "suite"      // lock, hot and memory: CoreSection
	KindPrimitives = "primitives" // incr, kv, list: PrimitivesSection
	KindFanout     = "fanout"     // FanoutSection
	KindCluster    = "cluster"    // ClusterSection
	KindScaling    = "scaling"    // the scaling section
)

// Modes of a run, as in the file names.
var Modes = []string{"full", "quick"}

// Unknown stands for what an older results file did not record.
const Unknown = "unknown"

// RunFile is one raw results file as the suite writes it: the
// environment block, the command and commit (recorded since issue #21;
// empty in older files) and whichever of the workloads' results it holds.
type RunFile struct {
	Env     []KV            `json:"environment"`
	Command string          `json:"command,omitempty"`
	Runs    []Record        `json:"runs,omitempty"`
	Memory  []MemResult     `json:"memory,omitempty"`
	Cluster *ClusterResult  `json:"cluster,omitempty"`
	Scaling *ScalingSummary `json:"scaling,omitempty"`

	// Set by LoadResults, not stored.
	Kind string `json:"-"`
	Mode string `json:"-"`
	Name string `json:"-"` // file name, e.g. "suite-full.json"
}

// ScalingSummary is what the summary reads of the scaling workload's
// results (the command's scalingResult): its runs are Records with the
// loop count beside them, which decoding into Record ignores.
type ScalingSummary struct {
	Loops  []int    `json:"loops"`
	Shapes []Shape  `json:"shapes"`
	Runs   []Record `json:"runs"`
}

// Shape is connections × pipeline depth.
type Shape struct {
	Conns int `json:"conns"`
	Depth int `json:"depth"`
}

// EnvValue returns the environment block's value for key, or Unknown.
func (f *RunFile) EnvValue(key string) string {
	for _, kv := range f.Env {
		if kv.Key == key && kv.Value != "" {
			return kv.Value
		}
	}
	return Unknown
}

// Date is the run's start as recorded in the environment block; the zero
// time when absent or unreadable.
func (f *RunFile) Date() time.Time {
	t, err := time.Parse(EnvDateLayout, f.EnvValue("date"))
	if err != nil {
		return time.Time{}
	}
	return t
}

// EnvDateLayout is the format of the environment block's date.
const EnvDateLayout = "2006-01-02 15:04 MST"

// Results holds, for each kind, the newest results file on disk: the one
// the generated section of that kind shows, since every run that writes
// a file rewrites its section too.
type Results map[string]*RunFile

// LoadResults reads the results files in dir. Of a kind's quick and full
// file the newer by recorded date wins (full on a tie). A missing file is
// no error; an unreadable or malformed one is.
func LoadResults(dir string) (Results, error) {
	out := Results{}
	for _, kind := range []string{KindCore, KindPrimitives, KindFanout, KindCluster, KindScaling} {
		for _, mode := range Modes {
			name := kind + "-" + mode + ".json"
			b, err := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			f := &RunFile{Kind: kind, Mode: mode, Name: name}
			if err := json.Unmarshal(b, f); err != nil {
				return nil, fmt.Errorf("suite: results %s: %w", name, err)
			}
			if old := out[kind]; old == nil || f.Date().After(old.Date()) {
				out[kind] = f
			}
		}
	}
	return out, nil
}
