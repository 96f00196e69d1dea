package signalapi

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/barometer-scaler/barometer/pkg/pressure"
	"github.com/barometer-scaler/barometer/pkg/signal"
	"github.com/barometer-scaler/barometer/pkg/signalview"
	barometerv1 "github.com/barometer-scaler/barometer/proto/barometer/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// enumFill is the value the filler gives each Go enum: the last one, so it
// is never the zero value a dropped field would read back as.
var enumFill = map[reflect.Type]int64{
	reflect.TypeFor[pressure.WalSaturationState]():    int64(pressure.Saturated),
	reflect.TypeFor[pressure.AccountClassification](): int64(pressure.ThroughputBound),
	reflect.TypeFor[signal.Dimension]():               int64(signal.WalDispatch),
}

// filler sets every field of a value by reflection, so a field added to
// signal.ScalingSignal (or anything under it) is covered without editing the
// test, and a kind it cannot fill fails the test instead of passing unseen.
// Numbers and strings are distinct, so swapped fields are caught too; bool
// number i is bit `bit` of i (or true when bit < 0), so that over the runs
// every bool is set at least once and any two differ at least once.
type filler struct {
	t     *testing.T
	n     int64
	bools int64
	bit   int
}

func (f *filler) fill(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)))
			return
		}
		for i := range v.NumField() {
			field := v.Type().Field(i)
			if !field.IsExported() {
				f.t.Fatalf("%s.%s is unexported: decide whether the API carries it", path, field.Name)
			}
			f.fill(v.Field(i), path+"."+field.Name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem(), path)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			f.fill(s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.String:
		f.n++
		v.SetString(fmt.Sprintf("%s#%d", path, f.n))
	case reflect.Bool:
		f.bools++
		v.SetBool(f.bit < 0 || f.bools>>f.bit&1 == 1)
	case reflect.Float64:
		f.n++
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Uint8:
		// signal.Parts, a set: every part.
		v.SetUint(uint64(signal.PartForecast<<1 - 1))
	case reflect.Int, reflect.Int64:
		if e, ok := enumFill[v.Type()]; ok {
			v.SetInt(e)
			return
		}
		f.n++
		v.SetInt(f.n)
	default:
		f.t.Fatalf("%s: the filler does not know %s; teach it, and the conversion", path, v.Type())
	}
}

func fullSignal(t *testing.T, bit int) signal.ScalingSignal {
	var s signal.ScalingSignal
	(&filler{t: t, bit: bit}).fill(reflect.ValueOf(&s).Elem(), "ScalingSignal")
	return s
}

// roundTrip goes through the wire bytes, not just the structs, so a field
// the generated code would drop is caught as well.
func roundTrip(t *testing.T, s signal.ScalingSignal) (*barometerv1.ScalingSignal, signal.ScalingSignal) {
	t.Helper()
	v := signalview.New(&s, "target-key", nil)
	v.Stale = true
	b, err := proto.Marshal(ToProto(&v))
	if err != nil {
		t.Fatal(err)
	}
	var p barometerv1.ScalingSignal
	if err := proto.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p, FromProto(&p)
}

func TestRoundTripKeepsEveryField(t *testing.T) {
	for bit := -1; bit < 6; bit++ {
		in := fullSignal(t, bit)
		p, out := roundTrip(t, in)
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("bool pattern %d: round trip changed the signal\n in: %+v\nout: %+v", bit, in, out)
		}
		if p.GetTarget() != "target-key" || !p.GetStale() {
			t.Fatalf("target %q stale %v, want target-key true", p.GetTarget(), p.GetStale())
		}
		if bit < 0 {
			// Every bool is true here, so every field of every message
			// must be set: a proto field ToProto never fills shows up.
			requireAllSet(t, p.ProtoReflect(), "ScalingSignal")
		}
	}
}

func requireAllSet(t *testing.T, m protoreflect.Message, path string) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := path + "." + string(fd.Name())
		if !m.Has(fd) {
			t.Errorf("%s is not set by ToProto", name)
			continue
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			list := m.Get(fd).List()
			for j := range list.Len() {
				requireAllSet(t, list.Get(j).Message(), fmt.Sprintf("%s[%d]", name, j))
			}
		case fd.Message() != nil && fd.Message().FullName() != "google.protobuf.Timestamp":
			requireAllSet(t, m.Get(fd).Message(), name)
		case fd.Enum() != nil && !fd.IsList() && m.Get(fd).Enum() == 0:
			t.Errorf("%s is UNSPECIFIED", name)
		}
	}
}

func TestWarmingUpHasNoSampledAt(t *testing.T) {
	warm := signal.ScalingSignal{
		RecommendedReplicas: 2,
		Reason:              signal.ReasonWarmingUp,
		Storage:             pressure.StoragePressure{Accounts: []pressure.WalAccountPressure{}},
	}
	p, out := roundTrip(t, warm)
	if p.SampledAt != nil {
		t.Fatalf("sampled_at = %v while warming up, want unset", p.SampledAt)
	}
	if !out.WarmingUp() || !reflect.DeepEqual(warm, out) {
		t.Fatalf("warming-up signal did not survive: %+v", out)
	}
}

// TestEnumsAreBijective checks each Go value maps to its own proto value,
// back again, and that every proto value but UNSPECIFIED is reached.
func TestEnumsAreBijective(t *testing.T) {
	check := func(name string, n int, to func(int) protoreflect.Enum, from func(protoreflect.Enum) int) {
		t.Helper()
		seen := map[protoreflect.EnumNumber]bool{}
		for v := range n {
			p := to(v)
			if p.Number() == 0 || seen[p.Number()] {
				t.Errorf("%s %d maps to %v", name, v, p)
			}
			seen[p.Number()] = true
			if back := from(p); back != v {
				t.Errorf("%s %d comes back as %d", name, v, back)
			}
		}
		if values := to(0).Descriptor().Values(); values.Len() != n+1 {
			t.Errorf("%s: proto has %d values, Go %d (+UNSPECIFIED)", name, values.Len(), n)
		}
		if p := to(n); p.Number() != 0 {
			t.Errorf("%s out of range maps to %v, want UNSPECIFIED", name, p)
		}
	}
	check("WalSaturationState", 3,
		func(v int) protoreflect.Enum { return walStateToProto(pressure.WalSaturationState(v)) },
		func(e protoreflect.Enum) int { return int(walStateFromProto(e.(barometerv1.WalSaturationState))) })
	check("AccountClassification", 3,
		func(v int) protoreflect.Enum { return classToProto(pressure.AccountClassification(v)) },
		func(e protoreflect.Enum) int { return int(classFromProto(e.(barometerv1.AccountClassification))) })
	check("Dimension", 3,
		func(v int) protoreflect.Enum { return dimensionToProto(signal.Dimension(v)) },
		func(e protoreflect.Enum) int { return int(dimensionFromProto(e.(barometerv1.Dimension))) })
	// The reason's parts, a set: each part one value of its own, and every
	// value but UNSPECIFIED reached.
	seen := map[barometerv1.ReasonPart]bool{}
	for bit := range 6 {
		ps := partsToProto(signal.Parts(1 << bit))
		if len(ps) != 1 || ps[0] == 0 || seen[ps[0]] || partsFromProto(ps) != signal.Parts(1<<bit) {
			t.Errorf("part %d maps to %v", bit, ps)
		}
		seen[ps[0]] = true
	}
	if n := barometerv1.ReasonPart(0).Descriptor().Values().Len(); n != len(seen)+1 {
		t.Errorf("ReasonPart: proto has %d values, Go %d (+UNSPECIFIED)", n, len(seen))
	}
}

func TestToInt32Saturates(t *testing.T) {
	for in, want := range map[int]int32{
		3: 3, -3: -3, math.MaxInt32 + 1: math.MaxInt32, math.MinInt32 - 1: math.MinInt32,
	} {
		if got := toInt32(in); got != want {
			t.Errorf("toInt32(%d) = %d, want %d", in, got, want)
		}
	}
}
