package member

// Rebuilds returns how many snapshots the Registry built for a change of
// membership (the first included) and for a warmup refresh.
func (r *Registry[T]) Rebuilds() (membership, warmup int64) {
	return r.rebuilds.Load(), r.refreshes.Load()
}

// Range calls f with the snapshot of every (service, method) the Registry
// keeps, after releasing the idle ones. For inspection: it allocates and
// takes the Registry's lock, which Select never takes.
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
