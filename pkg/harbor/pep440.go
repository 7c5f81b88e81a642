package harbor

import (
	"cmp"
	"math/big"
	"regexp"
	"strings"
)

// PEP 440 is implemented here because no maintained Go module for it is
// available to this project; the grammar and ordering follow the PEP (and the
// reference implementation in Python's `packaging`) including its
// normalisations: case-insensitivity, a leading "v", "alpha"/"beta"/"c"/"pre"/
// "preview" spellings, implicit numbers, "-N" post-releases and "_"/"-"
// separators.

var pep440Pattern = regexp.MustCompile(`^\s*v?` +
	`(?:(?P<epoch>[0-9]+)!)?` +
	`(?P<release>[0-9]+(?:\.[0-9]+)*)` +
	`(?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?` +
	`(?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?` +
	`(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?` +
	`(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$`)

var pep440Groups = func() map[string]int {
	m := map[string]int{}
	for i, name := range pep440Pattern.SubexpNames() {
		if name != "" {
			m[name] = i
		}
	}
	return m
}()

// pep440Version is a parsed version. Numbers are big.Int because PEP 440 puts
// no bound on them (date-based releases like 20260129 are common).
type pep440Version struct {
	epoch   *big.Int
	release []*big.Int // trailing zeros removed: 2.0 == 2.0.0
	preRank int        // 0 a, 1 b, 2 rc; -1 none
	pre     *big.Int
	post    *big.Int // nil: no post-release
	dev     *big.Int // nil: no dev-release
	local   []string // lower-cased segments; nil: no local part
}

func parsePEP440(s string) (pep440Version, bool) {
	m := pep440Pattern.FindStringSubmatch(strings.ToLower(s))
	if m == nil {
		return pep440Version{}, false
	}
	g := func(name string) string { return m[pep440Groups[name]] }
	v := pep440Version{epoch: bigOr(g("epoch")), preRank: -1}
	for part := range strings.SplitSeq(g("release"), ".") {
		v.release = append(v.release, bigOr(part))
	}
	for len(v.release) > 1 && v.release[len(v.release)-1].Sign() == 0 {
		v.release = v.release[:len(v.release)-1]
	}
	switch g("pre_l") {
	case "":
	case "a", "alpha":
		v.preRank, v.pre = 0, bigOr(g("pre_n"))
	case "b", "beta":
		v.preRank, v.pre = 1, bigOr(g("pre_n"))
	default: // c, rc, pre, preview
		v.preRank, v.pre = 2, bigOr(g("pre_n"))
	}
	if n := g("post_n1"); n != "" {
		v.post = bigOr(n)
	} else if g("post_l") != "" {
		v.post = bigOr(g("post_n2"))
	}
	if g("dev_l") != "" {
		v.dev = bigOr(g("dev_n"))
	}
	if local := g("local"); local != "" {
		v.local = strings.FieldsFunc(local, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	}
	return v, true
}

// bigOr parses a decimal string; "" is 0.
func bigOr(s string) *big.Int {
	n := new(big.Int)
	if s != "" {
		n.SetString(s, 10)
	}
	return n
}

// ComparePEP440 orders two version strings by PEP 440: it returns -1, 0 or +1
// and true, or 0 and false when either string is not a valid PEP 440 version.
// Equal means equivalent: "2.0" and "2.0.0" compare equal.
func ComparePEP440(a, b string) (int, bool) {
	va, okA := parsePEP440(a)
	vb, okB := parsePEP440(b)
	if !okA || !okB {
		return 0, false
	}
	return va.compare(vb), true
}

// IsPEP440 reports whether s is a valid PEP 440 version.
func IsPEP440(s string) bool {
	_, ok := parsePEP440(s)
	return ok
}

func (v pep440Version) compare(o pep440Version) int {
	if c := v.epoch.Cmp(o.epoch); c != 0 {
		return c
	}
	if c := compareRelease(v.release, o.release); c != 0 {
		return c
	}
	if c := cmp.Compare(v.preKey(), o.preKey()); c != 0 {
		return c
	}
	if v.preRank >= 0 {
		if c := v.pre.Cmp(o.pre); c != 0 {
			return c
		}
	}
	if c := compareOptional(v.post, o.post, -1); c != 0 {
		return c
	}
	if c := compareOptional(v.dev, o.dev, +1); c != 0 {
		return c
	}
	return compareLocal(v.local, o.local)
}

// preKey places a version among pre-releases: a dev release of a final
// version (1.0.dev1) sorts before every pre-release, a final or post release
// after them.
func (v pep440Version) preKey() int {
	switch {
	case v.preRank >= 0:
		return v.preRank
	case v.post == nil && v.dev != nil:
		return -1
	default:
		return 3
	}
}

func compareRelease(a, b []*big.Int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := big.NewInt(0), big.NewInt(0)
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if c := x.Cmp(y); c != 0 {
			return c
		}
	}
	return 0
}

// compareOptional compares two optional numbers; absent sorts as `absent`
// (-1: before any number, +1: after any number).
func compareOptional(a, b *big.Int, absent int) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return absent
	case b == nil:
		return -absent
	}
	return a.Cmp(b)
}

// compareLocal orders local labels: none before any; segment by segment,
// numeric segments compare as numbers and sort after alphanumeric ones, and a
// label that is a prefix of the other sorts first.
func compareLocal(a, b []string) int {
	if a == nil || b == nil {
		return cmp.Compare(boolRank(a != nil), boolRank(b != nil))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		na, aNum := new(big.Int).SetString(a[i], 10)
		nb, bNum := new(big.Int).SetString(b[i], 10)
		var c int
		switch {
		case aNum && bNum:
			c = na.Cmp(nb)
		case aNum != bNum:
			c = cmp.Compare(boolRank(aNum), boolRank(bNum))
		default:
			c = strings.Compare(a[i], b[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
