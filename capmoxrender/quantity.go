package capmoxrender

import (
	"math"
	"math/big"
	"regexp"

	"k8s.io/apimachinery/pkg/api/resource"
)

const mib = 1 << 20

// maxInt32 bounds numCores and memoryMiB: both are int32 in every capmox CRD.
const maxInt32 = math.MaxInt32

// Upper bounds checked before any exact arithmetic, so that a quantity such
// as 1e999999999 is refused at once instead of being expanded digit by digit.
var (
	maxCores  = *resource.NewQuantity(maxInt32, resource.DecimalSI)
	maxMemory = *resource.NewQuantity((maxInt32-7)<<20, resource.BinarySI)
)

// hugeExponent and the length limit bound what reaches resource.ParseQuantity: at most 40
// characters and an exponent of at most two digits. Parsing and comparing a
// quantity such as 1e-999999999 takes unbounded time, and no VM size needs
// either.
var hugeExponent = regexp.MustCompile(`[eE][+-]?[0-9]{3,}`)

func parseQuantity(kind, q string) (resource.Quantity, error) {
	if len(q) > 40 || hugeExponent.MatchString(q) {
		return resource.Quantity{}, errorf("cannot parse %s quantity %q: write a plain size such as 4, 500m, 8Gi or 1e3 (at most 40 characters, a two-digit exponent)", kind, q)
	}
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return resource.Quantity{}, errorf("cannot parse %s quantity %q: %w", kind, q, err)
	}
	return v, nil
}

// Cores converts a CPU quantity to whole cores, rounding up: 4 -> 4, 500m -> 1,
// 2500m -> 3. Zero, negative and out-of-range values are errors that name the
// value and the accepted range.
func Cores(q string) (int32, error) {
	v, err := parseQuantity("CPU", q)
	if err != nil {
		return 0, err
	}
	if v.Sign() <= 0 {
		return 0, errorf("CPU quantity %q must be above zero", q)
	}
	if v.Cmp(maxCores) > 0 {
		return 0, errorf("CPU quantity %q is more than %d cores, the largest numCores capmox accepts", q, maxInt32)
	}
	milli := ceilToInt(v.AsDec().UnscaledBig(), int32(v.AsDec().Scale()), 1000)
	cores := ceilDiv(milli, big.NewInt(1000))
	if !cores.IsInt64() || cores.Int64() > maxInt32 {
		return 0, errorf("CPU quantity %q is more than %d cores, the largest numCores capmox accepts", q, maxInt32)
	}
	return int32(cores.Int64()), nil
}

// MemoryMiB converts a memory quantity to MiB, rounding up to whole MiB and
// then up to a multiple of 8, because the capmox schema declares memoryMiB
// multipleOf 8: 8Gi -> 8192, 1G -> 954 -> 960.
func MemoryMiB(q string) (int32, error) {
	v, err := parseQuantity("memory", q)
	if err != nil {
		return 0, err
	}
	if v.Sign() <= 0 {
		return 0, errorf("memory quantity %q must be above zero", q)
	}
	if v.Cmp(maxMemory) > 0 {
		return 0, errorf("memory quantity %q is more than %d MiB, the largest memoryMiB capmox accepts", q, maxInt32-7)
	}
	bytes := ceilToInt(v.AsDec().UnscaledBig(), int32(v.AsDec().Scale()), 1)
	m := ceilDiv(bytes, big.NewInt(mib))
	m = ceilDiv(m, big.NewInt(8))
	m.Mul(m, big.NewInt(8))
	if !m.IsInt64() || m.Int64() > maxInt32-7 {
		return 0, errorf("memory quantity %q is more than %d MiB, the largest memoryMiB capmox accepts", q, maxInt32-7)
	}
	return int32(m.Int64()), nil
}

// ceilToInt returns ceil(unscaled * 10^-scale * mul) for a non-negative value.
func ceilToInt(unscaled *big.Int, scale int32, mul int64) *big.Int {
	num := new(big.Int).Mul(unscaled, big.NewInt(mul))
	if scale <= 0 {
		return num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil))
	}
	return ceilDiv(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
}

func ceilDiv(a, b *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}
