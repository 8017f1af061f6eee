package member

// What the metrics and package describe read of a Registry, off the hot
// path.

// Rebuilds returns how many snapshots the Registry built: for a change of
// membership (the first snapshot of a (service, method) included), and to
// refresh the warm weights of a warming provider.
func (r *Registry[T]) Rebuilds() (membership, warmup int64) {
	return r.rebuilds.Load(), r.refreshes.Load()
}

// Range calls f with the current snapshot of every (service, method) the
// Registry has built one for and keeps: it first releases the states idle
// for long enough (see SetIdle), so that what they held leaves the
// metrics and pages read through it. It is for inspection (metrics,
// describe): it allocates and briefly takes the Registry's lock, never
// held by Select.
func (r *Registry[T]) Range(f func(v *View[T])) {
	r.expire(r.wall().UnixNano())
	r.mu.Lock()
	services := make([]*service[T], 0, len(r.services))
	for _, svc := range r.services {
		services = append(services, svc)
	}
	r.mu.Unlock()
	for _, svc := range services {
		svc.methods.Range(func(_ string, st *state[T]) bool {
			if v := st.view.Load(); v != nil {
				f(v)
			}
			return true
		})
	}
}
