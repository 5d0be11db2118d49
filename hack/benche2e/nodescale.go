package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nodeScaleResult is the manager's memory for a platform-baseline plan on a cluster of
// workers Nodes.
type nodeScaleResult struct {
	workers int
	// labelsPerNode and metadataBytesPerNode describe worker 0: its labels, and its labels
	// and annotations as JSON.
	labelsPerNode, metadataBytesPerNode int
	planSeconds                         float64
	// peakRSSMiB is VmHWM and rssAfterMiB VmRSS, rssSettle after ReviewRequired;
	// heapInuseMiB is the Go heap in use then, after a garbage collection.
	peakRSSMiB, rssAfterMiB, heapInuseMiB float64
}

// nodeScaleRendered is the rendered configuration the Machine Config Daemon annotations of
// the node-scale cases name.
const nodeScaleRendered = "rendered-worker-5f1c8d0b8a2e4c7f9d3b6a1e0c2f4a8d"

// runNodeScale plans platform-baseline (config/samples/baseline_sample.yaml) on a cluster
// of workers worker Nodes and measures the manager's memory once the plan waits for
// review, when it watches the Nodes as an input. No pool simulator runs: nothing is
// applied. With -pprof-dir it writes the heap profile taken then, and the one taken when
// the heap in use peaked from the plan's start (heap-peak-<workers>-workers.pb.gz).
func runNodeScale(ctx context.Context, opts *options, workers int) (res nodeScaleResult, err error) {
	kind := nodeKind{role: "worker", mcoAnnotations: true, renderedConfig: nodeScaleRendered}
	start := time.Now()
	c, err := newCluster(ctx, opts, fmt.Sprintf("nodes-%d", workers), clusterSetup{
		upstreamCRDs: true,
		manifests:    []string{scenarioManifest},
		nodes:        []nodeSet{{kind: kind, count: workers}},
	})
	if err != nil {
		return res, err
	}
	defer func() { c.close(err != nil) }()
	sample := kind.node(0)
	res = nodeScaleResult{workers: workers, labelsPerNode: len(sample.Labels), metadataBytesPerNode: metadataBytes(sample)}
	logf("%d worker Nodes (%d labels, %d bytes of labels and annotations each) created in %.1fs",
		workers, res.labelsPerNode, res.metadataBytesPerNode, time.Since(start).Seconds())

	vpc, pw, err := c.watchSample(ctx, "config/samples/baseline_sample.yaml")
	if err != nil {
		return res, err
	}
	defer pw.stop()
	port, err := freePort()
	if err != nil {
		return res, err
	}
	pprof := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := c.startManager(ctx, "--pprof-bind-address="+pprof); err != nil {
		return res, err
	}
	var peak *peakSampler
	if opts.pprofDir != "" {
		peak = samplePeak(ctx, pprof, 100*time.Millisecond)
		defer peak.stop()
	}
	planStart, reviewAt, err := c.plan(ctx, vpc, pw)
	if err != nil {
		return res, err
	}
	res.planSeconds = reviewAt.Sub(planStart).Seconds()
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(opts.rssSettle):
	}
	if res.peakRSSMiB, res.rssAfterMiB, err = c.m.memory(); err != nil {
		return res, err
	}
	if res.heapInuseMiB, err = heapInuse(ctx, pprof); err != nil {
		return res, err
	}
	if opts.pprofDir != "" {
		path := filepath.Join(opts.pprofDir, fmt.Sprintf("heap-%d-workers.pb.gz", workers))
		if err := saveHeapProfile(ctx, pprof, path); err != nil {
			return res, err
		}
		logf("heap profile of the manager with %d workers: %s", workers, path)
		if inuse, profile := peak.stop(); profile != nil {
			path = filepath.Join(opts.pprofDir, fmt.Sprintf("heap-peak-%d-workers.pb.gz", workers))
			if err := os.WriteFile(path, profile, 0o644); err != nil {
				return res, err
			}
			logf("heap profile of the manager with %d workers when its heap in use peaked at %.1f MiB: %s", workers, inuse, path)
		}
	}
	logf("%d workers: ReviewRequired after %.2fs, peak RSS %.1f MiB, RSS after %.1f MiB, heap in use %.1f MiB",
		workers, res.planSeconds, res.peakRSSMiB, res.rssAfterMiB, res.heapInuseMiB)
	return res, nil
}

// heapInuse is HeapInuse of the manager's runtime.MemStats, in MiB, after a garbage
// collection (the pprof heap endpoint's text form lists the MemStats).
func heapInuse(ctx context.Context, addr string) (float64, error) {
	return heapInuseFrom(ctx, "http://"+addr+"/debug/pprof/heap?gc=1&debug=1")
}

// heapInuseFrom reads HeapInuse, in MiB, from the text form of a heap profile at url.
func heapInuseFrom(ctx context.Context, url string) (float64, error) {
	body, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = body.Close() }()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapInuse = "); ok {
			bytes, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return bytes / (1 << 20), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no HeapInuse in the heap profile %s", url)
}

// peakSampler reads the manager's heap in use every interval and keeps the heap profile
// taken when it was highest. The profile's in-use figures are those of the garbage
// collection before it: what was live as the heap grew to its peak. The sampling's own
// requests cost the manager some memory, so a case run with -pprof-dir reads a little
// higher than one without.
type peakSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	inuse   float64
	profile []byte
}

func samplePeak(ctx context.Context, addr string, interval time.Duration) *peakSampler {
	ctx, cancel := context.WithCancel(ctx)
	p := &peakSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			inuse, err := heapInuseNow(ctx, addr)
			if err != nil || inuse <= p.inuse {
				continue
			}
			body, err := get(ctx, "http://"+addr+"/debug/pprof/heap")
			if err != nil {
				continue
			}
			profile, err := io.ReadAll(body)
			_ = body.Close()
			if err == nil {
				p.inuse, p.profile = inuse, profile
			}
		}
	}()
	return p
}

// stop ends the sampling and returns the highest heap in use seen, in MiB, and the
// profile taken then.
func (p *peakSampler) stop() (float64, []byte) {
	p.cancel()
	<-p.done
	return p.inuse, p.profile
}

// heapInuseNow is HeapInuse of the manager's runtime.MemStats, in MiB, as it is.
func heapInuseNow(ctx context.Context, addr string) (float64, error) {
	return heapInuseFrom(ctx, "http://"+addr+"/debug/pprof/heap?debug=1")
}

// saveHeapProfile writes the manager's heap profile (for go tool pprof) to path.
func saveHeapProfile(ctx context.Context, addr, path string) error {
	body, err := get(ctx, "http://"+addr+"/debug/pprof/heap")
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}
