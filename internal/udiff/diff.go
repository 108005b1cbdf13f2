package udiff

// script returns a minimal edit script turning a into b. Within each run of
// changes, deletions come before insertions, as in diff -u.
func script(a, b []string) []op {
	ids := map[string]int{}
	id := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			n, ok := ids[l]
			if !ok {
				n = len(ids)
				ids[l] = n
			}
			out[i] = n
		}
		return out
	}
	ai, bi := id(a), id(b)
	deleted, inserted := changes(ai, bi)

	ops := make([]op, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && deleted[i]:
			ops = append(ops, op{opDelete, i, j})
			i++
		case j < len(b) && inserted[j]:
			ops = append(ops, op{opInsert, i, j})
			j++
		default:
			ops = append(ops, op{opEqual, i, j})
			i++
			j++
		}
	}
	return ops
}

// changes marks the elements of a deleted and of b inserted by a minimal
// edit script (a longest common subsequence keeps the rest).
//
// Elements that occur in only one of the sequences can never be kept, so
// they are marked first and left out of the search (as GNU diff does):
// this keeps a rewrite of a whole file cheap. The rest goes to Myers's
// O((N+M)D) algorithm in its linear-space form.
func changes(a, b []int) (deleted, inserted []bool) {
	deleted = make([]bool, len(a))
	inserted = make([]bool, len(b))
	inA := map[int]bool{}
	for _, x := range a {
		inA[x] = true
	}
	inB := map[int]bool{}
	for _, x := range b {
		inB[x] = true
	}
	var fa, fb []int // the elements that occur on both sides
	var ia, ib []int // their indexes in a and b
	for i, x := range a {
		if inB[x] {
			fa, ia = append(fa, x), append(ia, i)
		} else {
			deleted[i] = true
		}
	}
	for j, x := range b {
		if inA[x] {
			fb, ib = append(fb, x), append(ib, j)
		} else {
			inserted[j] = true
		}
	}
	m := myers{a: fa, b: fb, deleted: make([]bool, len(fa)), inserted: make([]bool, len(fb))}
	m.compare(0, len(fa), 0, len(fb))
	for k, d := range m.deleted {
		if d {
			deleted[ia[k]] = true
		}
	}
	for k, d := range m.inserted {
		if d {
			inserted[ib[k]] = true
		}
	}
	return deleted, inserted
}

// myers finds a shortest edit script between a and b by divide and
// conquer on the middle snake (Myers 1986, section 4b).
type myers struct {
	a, b              []int
	deleted, inserted []bool
	vf, vb            []int // scratch diagonals, reused across calls
}

// compare marks the changes between a[aLo:aHi] and b[bLo:bHi].
func (m *myers) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && m.a[aLo] == m.b[bLo] {
		aLo, bLo = aLo+1, bLo+1
	}
	for aLo < aHi && bLo < bHi && m.a[aHi-1] == m.b[bHi-1] {
		aHi, bHi = aHi-1, bHi-1
	}
	switch {
	case aLo == aHi:
		for j := bLo; j < bHi; j++ {
			m.inserted[j] = true
		}
		return
	case bLo == bHi:
		for i := aLo; i < aHi; i++ {
			m.deleted[i] = true
		}
		return
	}
	x, y, ok := m.split(aLo, aHi, bLo, bHi)
	if !ok { // no element in common: replace everything
		for i := aLo; i < aHi; i++ {
			m.deleted[i] = true
		}
		for j := bLo; j < bHi; j++ {
			m.inserted[j] = true
		}
		return
	}
	m.compare(aLo, x, bLo, y)
	m.compare(x, aHi, y, bHi)
}

// split returns a point (x, y) on a shortest edit path from (aLo, bLo) to
// (aHi, bHi), strictly between them, found by running the search forward
// from the start and backward from the end until the two paths overlap.
// Both ranges are non-empty and differ in their first and last elements,
// so the edit distance D is at least 2 and both halves are smaller. ok is
// false when the sequences have nothing in common (D = N+M).
func (m *myers) split(aLo, aHi, bLo, bHi int) (x, y int, ok bool) {
	s := m.middle(m.a[aLo:aHi], m.b[bLo:bHi])
	for d := 0; d < s.maxD; d++ {
		if px, py, ok := s.forward(d); ok {
			return aLo + px, bLo + py, true
		}
		if px, py, ok := s.backward(d); ok {
			return aLo + px, bLo + py, true
		}
	}
	return 0, 0, false
}

// middleSearch is the state of split's search for the middle snake between
// a and b, run D by D from both ends.
type middleSearch struct {
	a, b     []int
	n, mm    int
	maxD     int // the search ends by this D (half of N+M, rounded up)
	off      int // vf[off+k] and vb[off+k] hold diagonal k
	delta    int // n - mm: the backward search's diagonal k is delta-k forward
	oddDelta bool
	// vf[off+k]: furthest x reached forward on diagonal k = x-y.
	// vb[off+k]: furthest distance reached backward from (n, mm) on the
	// reversed diagonal k, which is forward diagonal delta-k.
	vf, vb []int
	// kfLo/kfHi, kbLo/kbHi trim diagonals that ran off the edges.
	kfLo, kfHi, kbLo, kbHi int
}

// middle starts a middle-snake search between a and b on m's scratch
// diagonals, grown as needed.
func (m *myers) middle(a, b []int) middleSearch {
	n, mm := len(a), len(b)
	maxD := (n + mm + 1) / 2
	size := 2*maxD + 2
	if cap(m.vf) < size {
		m.vf, m.vb = make([]int, size), make([]int, size)
	}
	vf, vb := m.vf[:size], m.vb[:size]
	for i := range vf {
		vf[i], vb[i] = -1, -1
	}
	vf[maxD+1], vb[maxD+1] = 0, 0
	return middleSearch{
		a: a, b: b, n: n, mm: mm, maxD: maxD, off: maxD,
		delta: n - mm, oddDelta: (n-mm)%2 != 0, vf: vf, vb: vb,
	}
}

// forward extends the forward paths by one more edit (D = d) and reports
// the end (x, y) of the first snake that overlaps a backward path; only
// possible when delta is odd.
func (s *middleSearch) forward(d int) (x, y int, ok bool) {
	vf, off := s.vf, s.off
	for k := -d + s.kfLo; k <= d-s.kfHi; k += 2 {
		var px int
		if k == -d || (k != d && vf[off+k-1] < vf[off+k+1]) {
			px = vf[off+k+1] // down: insertion
		} else {
			px = vf[off+k-1] + 1 // right: deletion
		}
		py := px - k
		for px < s.n && py < s.mm && s.a[px] == s.b[py] {
			px, py = px+1, py+1
		}
		vf[off+k] = px
		switch {
		case px > s.n:
			s.kfHi += 2
		case py > s.mm:
			s.kfLo += 2
		case s.oddDelta:
			kb := s.delta - k
			if i := off + kb; i >= 0 && i < len(s.vb) && s.vb[i] != -1 && px >= s.n-s.vb[i] {
				return px, py, true
			}
		}
	}
	return 0, 0, false
}

// backward extends the backward paths by one more edit (D = d) and reports
// the end (x, y) of the forward snake on the first diagonal where the two
// paths overlap; only possible when delta is even.
func (s *middleSearch) backward(d int) (x, y int, ok bool) {
	vb, off := s.vb, s.off
	for k := -d + s.kbLo; k <= d-s.kbHi; k += 2 {
		var qx int
		if k == -d || (k != d && vb[off+k-1] < vb[off+k+1]) {
			qx = vb[off+k+1]
		} else {
			qx = vb[off+k-1] + 1
		}
		qy := qx - k
		for qx < s.n && qy < s.mm && s.a[s.n-qx-1] == s.b[s.mm-qy-1] {
			qx, qy = qx+1, qy+1
		}
		vb[off+k] = qx
		switch {
		case qx > s.n:
			s.kbHi += 2
		case qy > s.mm:
			s.kbLo += 2
		case !s.oddDelta:
			kf := s.delta - k
			if i := off + kf; i >= 0 && i < len(s.vf) && s.vf[i] != -1 {
				px := s.vf[i]
				py := px - kf
				if px >= s.n-qx {
					return px, py, true
				}
			}
		}
	}
	return 0, 0, false
}
