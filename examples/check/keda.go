package check

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"
)

// KEDAModule is the module whose API types, CRDs and scaler sources the
// check reads: the version this module requires.
const KEDAModule = "github.com/kedacore/keda/v2"

// KEDA is what the check learns from KEDA's own sources, in the module
// cache: the CRD schemas the API server enforces, and the metadata keys each
// scaler declares.
type KEDA struct {
	Dir string
	// schemas by kind (ScaledObject, TriggerAuthentication, ...).
	schemas map[string]*spec.Schema
	// structs of pkg/scalers and pkg/scalers/authentication, by package
	// and type name ("scalers.externalScalerMetadata").
	structs map[string]*ast.StructType
}

// LoadKEDA finds the required KEDA module's directory (go list -m) and
// reads its CRDs and scaler declarations.
func LoadKEDA() (*KEDA, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", KEDAModule).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m %s: %w", KEDAModule, err)
	}
	k := &KEDA{Dir: strings.TrimSpace(string(out)), schemas: map[string]*spec.Schema{}, structs: map[string]*ast.StructType{}}
	if k.Dir == "" {
		return nil, fmt.Errorf("go list -m %s: module not downloaded (go mod download)", KEDAModule)
	}
	for kind, file := range map[string]string{
		"ScaledObject":                 "keda.sh_scaledobjects.yaml",
		"TriggerAuthentication":        "keda.sh_triggerauthentications.yaml",
		"ClusterTriggerAuthentication": "keda.sh_clustertriggerauthentications.yaml",
	} {
		s, err := crdSchema(filepath.Join(k.Dir, "config", "crd", "bases", file), "v1alpha1")
		if err != nil {
			return nil, err
		}
		k.schemas[kind] = s
	}
	for _, dir := range []string{"pkg/scalers", "pkg/scalers/authentication"} {
		if err := k.parseStructs(filepath.Join(k.Dir, dir)); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// crdSchema reads a CRD's openAPIV3Schema for one version.
func crdSchema(path, version string) (*spec.Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			s := new(spec.Schema)
			if err := json.Unmarshal(v.Schema.OpenAPIV3Schema, s); err != nil {
				return nil, fmt.Errorf("%s: schema: %w", path, err)
			}
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s: no version %s", path, version)
}

// ValidateSchema checks a document against its kind's CRD schema (types,
// enums, minimums, required fields), with the validator the API server's
// CRD validation is built on. Kinds without a schema pass.
func (k *KEDA) ValidateSchema(d *Document) []error {
	s, ok := k.schemas[d.GVK.Kind]
	if !ok {
		return nil
	}
	var obj any
	if err := json.Unmarshal(d.JSON, &obj); err != nil {
		return []error{err}
	}
	res := validate.NewSchemaValidator(s, nil, "", strfmt.Default).Validate(obj)
	return res.Errors
}

func (k *KEDA) parseStructs(dir string) error {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					k.structs[f.Name.Name+"."+ts.Name.Name] = st
				}
			}
			return true
		})
	}
	return nil
}

// Keys are the parameter names a KEDA scaler declares, by where KEDA reads
// them: "triggerMetadata" (the trigger's metadata), "authParams" (a
// TriggerAuthentication's parameters), "resolvedEnv".
type Keys map[string][]string

// ScalerKeys reads the `keda:"name=..., order=..."` tags of a scaler's
// metadata struct in pkg/scalers (for example externalScalerMetadata),
// following the untagged-name optional struct fields KEDA's typed config
// descends into (such as authentication.Config).
func (k *KEDA) ScalerKeys(structName string) (Keys, error) {
	keys := Keys{}
	if err := k.collect("scalers", structName, keys, 0); err != nil {
		return nil, err
	}
	for o := range keys {
		slices.Sort(keys[o])
		keys[o] = slices.Compact(keys[o])
	}
	return keys, nil
}

func (k *KEDA) collect(pkg, structName string, keys Keys, depth int) error {
	st, ok := k.structs[pkg+"."+structName]
	if !ok {
		return fmt.Errorf("KEDA %s: no struct %s.%s", k.Dir, pkg, structName)
	}
	if depth > 5 {
		return fmt.Errorf("KEDA struct %s: nested too deeply", structName)
	}
	for _, f := range st.Fields.List {
		if f.Tag == nil {
			continue
		}
		raw, err := strconv.Unquote(f.Tag.Value)
		if err != nil {
			return err
		}
		tag, ok := reflect.StructTag(raw).Lookup("keda")
		if !ok {
			continue
		}
		var names, orders []string
		for _, opt := range strings.Split(tag, ",") {
			key, val, _ := strings.Cut(strings.TrimSpace(opt), "=")
			switch key {
			case "name":
				names = strings.Split(val, ";")
			case "order":
				orders = strings.Split(val, ";")
			}
		}
		if len(names) == 0 {
			// A nested struct KEDA parses in place (keda:"optional").
			if p, typ := typeName(pkg, f.Type); typ != "" {
				if err := k.collect(p, typ, keys, depth+1); err != nil {
					return err
				}
			}
			continue
		}
		for _, o := range orders {
			keys[strings.TrimSpace(o)] = append(keys[strings.TrimSpace(o)], names...)
		}
	}
	return nil
}

// typeName is the package and name of a field's struct type.
func typeName(pkg string, e ast.Expr) (string, string) {
	switch t := e.(type) {
	case *ast.Ident:
		return pkg, t.Name
	case *ast.StarExpr:
		return typeName(pkg, t.X)
	case *ast.SelectorExpr:
		if x, ok := t.X.(*ast.Ident); ok {
			return x.Name, t.Sel.Name
		}
	}
	return "", ""
}
