package capmoxrender_test

import (
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

func TestCores(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   int32
		err    bool
	}{
		"Whole":        {reason: "4 gives 4", in: "4", want: 4},
		"HalfCore":     {reason: "500m rounds up to 1", in: "500m", want: 1},
		"TwoAndAHalf":  {reason: "2500m rounds up to 3", in: "2500m", want: 3},
		"OneMilli":     {reason: "1m still needs a core", in: "1m", want: 1},
		"ExactMillis":  {reason: "3000m is exactly 3", in: "3000m", want: 3},
		"Decimal":      {reason: "1.5 rounds up to 2", in: "1.5", want: 2},
		"Exponent":     {reason: "1e1 is 10", in: "1e1", want: 10},
		"Nano":         {reason: "1n rounds up to 1", in: "1n", want: 1},
		"Zero":         {reason: "zero sizes nothing", in: "0", err: true},
		"Negative":     {reason: "negative is refused", in: "-1", err: true},
		"Garbage":      {reason: "not a quantity", in: "two", err: true},
		"TooManyCores": {reason: "numCores is int32", in: "3Gi", err: true},
		"MaxInt32":     {reason: "the largest int32 is accepted", in: "2147483647", want: 2147483647},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := capmoxrender.Cores(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("%s: Cores(%q) error %v, want error %t", tc.reason, tc.in, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: Cores(%q) (-want +got):\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

func TestMemoryMiB(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   int32
		err    bool
	}{
		"8Gi":        {reason: "8Gi is 8192", in: "8Gi", want: 8192},
		"4Gi":        {reason: "4Gi is 4096", in: "4Gi", want: 4096},
		"1G":         {reason: "1G is 953.67 MiB: 954, then 960 for multipleOf 8", in: "1G", want: 960},
		"OneByte":    {reason: "1 byte needs 8 MiB (multipleOf 8)", in: "1", want: 8},
		"8Mi":        {reason: "8Mi is exact", in: "8Mi", want: 8},
		"9Mi":        {reason: "9Mi rounds up to 16", in: "9Mi", want: 16},
		"Fraction":   {reason: "0.5Gi is 512", in: "0.5Gi", want: 512},
		"MilliBytes": {reason: "1500m bytes is 2 bytes: 8 MiB", in: "1500m", want: 8},
		"Zero":       {reason: "zero is refused", in: "0", err: true},
		"Huge":       {reason: "memoryMiB is int32", in: "3Pi", err: true},
		"Garbage":    {reason: "not a quantity", in: "4GB", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := capmoxrender.MemoryMiB(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("%s: MemoryMiB(%q) error %v, want error %t", tc.reason, tc.in, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: MemoryMiB(%q) (-want +got):\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

// exact returns the quantity as an exact rational.
func exact(q resource.Quantity) *big.Rat {
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(int(d.Scale())))), nil)
	if d.Scale() >= 0 {
		return r.Quo(r, new(big.Rat).SetInt(scale))
	}
	return r.Mul(r, new(big.Rat).SetInt(scale))
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

var bigExponent = regexp.MustCompile(`[eE][+-]?[0-9]{3,}`)

// FuzzQuantities checks the rounding against exact rational arithmetic: a
// result is never below what was asked, less than one unit (a core, or 8
// MiB) above it, and memory is a multiple of 8; anything else is an error.
func FuzzQuantities(f *testing.F) {
	for _, s := range []string{"4", "500m", "2500m", "1G", "8Gi", "0.5Gi", "1e3", "-1", "0", "1n", "1Ei", "abc", "1.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 40 || bigExponent.MatchString(s) {
			// Outside the bound the package enforces (resource.ParseQuantity
			// itself can take unbounded time on such exponents): refused.
			_, cerr := capmoxrender.Cores(s)
			_, merr := capmoxrender.MemoryMiB(s)
			if cerr == nil || merr == nil {
				t.Fatalf("%q is outside the quantity bound but was accepted", s)
			}
			return
		}
		q, perr := resource.ParseQuantity(s)
		cores, cerr := capmoxrender.Cores(s)
		mem, merr := capmoxrender.MemoryMiB(s)
		if perr != nil {
			if cerr == nil || merr == nil {
				t.Fatalf("%q does not parse but was accepted", s)
			}
			return
		}
		asked := exact(q)
		if cerr == nil {
			got := new(big.Rat).SetInt64(int64(cores))
			if got.Cmp(asked) < 0 || new(big.Rat).Sub(got, asked).Cmp(big.NewRat(1, 1)) >= 0 {
				t.Fatalf("Cores(%q) = %d, asked %s", s, cores, asked.FloatString(6))
			}
		} else if q.Sign() > 0 && asked.Cmp(big.NewRat(2147483647, 1)) <= 0 {
			t.Fatalf("Cores(%q) refused an in-range value: %v", s, cerr)
		}
		if merr == nil {
			got := new(big.Rat).SetInt64(int64(mem) << 20)
			if mem%8 != 0 || got.Cmp(asked) < 0 || new(big.Rat).Sub(got, asked).Cmp(big.NewRat(8<<20, 1)) >= 0 {
				t.Fatalf("MemoryMiB(%q) = %d, asked %s bytes", s, mem, asked.FloatString(3))
			}
		} else if q.Sign() > 0 && asked.Cmp(big.NewRat(1<<50, 1)) < 0 {
			t.Fatalf("MemoryMiB(%q) refused an in-range value: %v", s, merr)
		}
	})
}

func TestHugeQuantitiesAreRefusedQuickly(t *testing.T) {
	for _, q := range []string{"1e999999999", "1e-999999999", "1E+100", "9Ei", "1e18", strings.Repeat("9", 41)} {
		if _, err := capmoxrender.Cores(q); err == nil {
			t.Errorf("Cores(%q) must be refused", q)
		}
		if _, err := capmoxrender.MemoryMiB(q); err == nil {
			t.Errorf("MemoryMiB(%q) must be refused", q)
		}
	}
}

// FuzzDiskGiB: DiskGiB is the smallest whole GiB at or above the size
// asked, and refuses what does not parse, is not above zero, or is beyond
// int32 GiB.
func FuzzDiskGiB(f *testing.F) {
	for _, s := range []string{"50Gi", "50G", "20Gi", "5368709121", "0", "-1Gi", "1Ei", "8Ei", "abc", "1e3", "1n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := capmoxrender.DiskGiB(s)
		if len(s) > 40 || bigExponent.MatchString(s) {
			if err == nil {
				t.Fatalf("%q is outside the quantity bound but was accepted", s)
			}
			return
		}
		q, perr := resource.ParseQuantity(s)
		if perr != nil || q.Sign() <= 0 {
			if err == nil {
				t.Fatalf("%q is not a positive size but DiskGiB gave %d", s, g)
			}
			return
		}
		asked := new(big.Rat).Quo(exact(q), big.NewRat(1<<30, 1))
		if err != nil {
			if asked.Cmp(big.NewRat(2147483647, 1)) <= 0 {
				t.Fatalf("DiskGiB(%q) refused a size within int32 GiB: %v", s, err)
			}
			return
		}
		got := new(big.Rat).SetInt64(int64(g))
		if got.Cmp(asked) < 0 || new(big.Rat).Sub(got, asked).Cmp(big.NewRat(1, 1)) >= 0 {
			t.Fatalf("DiskGiB(%q) = %d, asked %s GiB", s, g, asked.FloatString(6))
		}
	})
}
