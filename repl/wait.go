package repl

import "time"

// WAIT, after Redis 7.0's waitCommand and processClientsWaitingReplicas:
// a client waits until enough replicas acknowledged the stream up to its
// last write, or its timeout passes. Master keeps the requests, under its
// lock, and releases them as acknowledgements come.

// Wait is a WAIT client's request.
type Wait struct {
	off, n  int64
	release func(acked int64)
	done    bool
	timer   *time.Timer
}

// AddWaitLocked registers a request released, with the count of replicas
// that acknowledged off, once n of them did (CheckWaits), at its timeout
// (WaitTimeout) or by ReleaseWait.
func (m *Master) AddWaitLocked(off, n int64, release func(acked int64)) *Wait {
	w := &Wait{off: off, n: n, release: release}
	m.waits = append(m.waits, w)
	return w
}

// WaitTimeout releases w after d unless it was released before.
func (m *Master) WaitTimeout(w *Wait, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !w.done {
		w.timer = time.AfterFunc(d, func() { m.ReleaseWait(w) })
	}
}

// CheckWaits releases the requests whose offset enough replicas
// acknowledged.
func (m *Master) CheckWaits() {
	m.mu.Lock()
	if len(m.waits) == 0 {
		m.mu.Unlock()
		return
	}
	keep := m.waits[:0]
	var done []*Wait
	for _, w := range m.waits {
		if m.AckedLocked(w.off) >= w.n {
			done = append(done, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(m.waits[len(keep):])
	m.waits = keep
	m.mu.Unlock()
	for _, w := range done {
		m.ReleaseWait(w)
	}
}

// ReleaseWait releases w now, with the count of replicas that
// acknowledged its offset (once: a later call does nothing).
func (m *Master) ReleaseWait(w *Wait) {
	m.mu.Lock()
	if w.done {
		m.mu.Unlock()
		return
	}
	w.done = true
	n := m.AckedLocked(w.off)
	for i, x := range m.waits {
		if x == w {
			m.waits = append(m.waits[:i], m.waits[i+1:]...)
			break
		}
	}
	t := w.timer
	m.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	w.release(n)
}

// NumWaits counts the requests not released yet.
func (m *Master) NumWaits() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waits)
}
