// Package mountns runs a process of the suite in a mount namespace (and a
// UTS namespace) of its own, with files and directories bound over paths of
// this machine's tree, the way a container runtime mounts a pod's volumes,
// its /etc/hosts and its service account token: the process sees them at
// the paths its configuration names, and nothing outside the namespace
// changes.
//
// A target that does not exist on this machine (the chart's
// /etc/barometer/otlp, a pod's /var/run/secrets/...) needs a mount point.
// Rather than create one in the machine's own tree, the top-level
// directory that holds it (/etc, /run) gets an overlay inside the
// namespace, its upper layer on a tmpfs in the namespace too, and the
// mount point is made there. So is a target that is a symbolic link (an
// /etc/resolv.conf pointing into /run): it is replaced by a plain file in
// the overlay before the bind, rather than followed.
package mountns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/barometer-scaler/barometer/e2e/internal/proc"
)

// Bind is one bind mount: Source (this machine's file or directory) seen
// at Target inside the namespace.
type Bind struct {
	Source, Target string
}

// Namespace is what a process sees of its own.
type Namespace struct {
	// Binds are mounted in order.
	Binds []Bind
	// Hostname, when set, is the namespace's host name (a pod's is its
	// name).
	Hostname string
	// Scratch is a directory of this machine the namespace mounts a tmpfs
	// on for its overlays' upper layers; needed when a target must be
	// made.
	Scratch string
}

// script runs inside the new namespaces: it makes the overlays, the
// mount points and the binds, sets the host name, then execs the program.
// Its arguments: the host name ("" for none), then "scratch DIR" (a tmpfs
// for the overlays), "overlay DIR", "bind SRC DST" and "file SRC DST" (a
// bind whose target is a file) words, "--", and the program with its
// arguments.
const script = `set -e
host=$1
shift
while [ "$1" != "--" ]; do
  case $1 in
  scratch)
    scratch=$2
    mount -t tmpfs -o mode=0755 e2e-scratch "$scratch"
    shift 2 ;;
  overlay)
    mkdir -p "$scratch/upper$2" "$scratch/work$2"
    mount -t overlay e2e-overlay -o "lowerdir=$2,upperdir=$scratch/upper$2,workdir=$scratch/work$2" "$2"
    shift 2 ;;
  bind)
    mkdir -p "$3"
    mount --bind "$2" "$3"
    shift 3 ;;
  file)
    if [ -L "$3" ]; then rm -f "$3"; fi
    if [ ! -e "$3" ]; then mkdir -p "$(dirname "$3")"; : >"$3"; fi
    mount --bind "$2" "$3"
    shift 3 ;;
  *) echo "mountns: unknown word $1" >&2; exit 2 ;;
  esac
done
shift
if [ -n "$host" ]; then echo "$host" >/proc/sys/kernel/hostname; fi
exec "$@"`

// Wrap returns s run inside a namespace of its own: s.Path and s.Args
// become unshare's, which makes the namespaces and runs the script above.
func Wrap(s proc.Spec, ns Namespace) (proc.Spec, error) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return proc.Spec{}, err
	}
	path := s.Path
	if !strings.ContainsRune(path, '/') {
		if path, err = exec.LookPath(path); err != nil {
			return proc.Spec{}, err
		}
	}
	words, err := plan(ns)
	if err != nil {
		return proc.Spec{}, err
	}
	args := []string{"--mount", "--uts", "--propagation", "private", "--", "sh", "-c", script, "sh", ns.Hostname}
	args = append(args, words...)
	args = append(args, "--", path)
	s.Path, s.Args = unshare, append(args, s.Args...)
	return s, nil
}

// plan turns the binds into the script's words: an overlay for every
// top-level directory a target must be made in (or replaced in), first,
// then the binds.
func plan(ns Namespace) ([]string, error) {
	var overlays, binds []string
	for _, b := range ns.Binds {
		if !filepath.IsAbs(b.Target) || !filepath.IsAbs(b.Source) {
			return nil, fmt.Errorf("bind %s on %s: both paths must be absolute", b.Source, b.Target)
		}
		src, err := os.Stat(b.Source)
		if err != nil {
			return nil, err
		}
		target, made, err := resolve(b.Target)
		if err != nil {
			return nil, err
		}
		if made {
			top := "/" + strings.SplitN(strings.TrimPrefix(target, "/"), "/", 2)[0]
			if top == "/" || top == "/proc" || top == "/sys" || top == "/dev" {
				return nil, fmt.Errorf("bind on %s: no overlay is made on %s", b.Target, top)
			}
			if ns.Scratch == "" {
				return nil, fmt.Errorf("bind on %s: the target must be made, and the namespace has no scratch directory", b.Target)
			}
			if !slices.Contains(overlays, top) {
				overlays = append(overlays, top)
			}
		}
		kind := "bind"
		if !src.IsDir() {
			kind = "file"
		}
		binds = append(binds, kind, b.Source, target)
	}
	var words []string
	if len(overlays) > 0 {
		if err := os.MkdirAll(ns.Scratch, 0o755); err != nil {
			return nil, err
		}
		words = append(words, "scratch", ns.Scratch)
	}
	for _, top := range overlays {
		words = append(words, "overlay", top)
	}
	return append(words, binds...), nil
}

// resolve returns target with the symbolic links of its existing part
// resolved (so /var/run/x names /run/x), and whether a mount point must be
// made for it: it does not exist, or it is itself a symbolic link.
func resolve(target string) (string, bool, error) {
	fi, err := os.Lstat(target)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink == 0:
		return target, false, nil
	case err == nil:
		dir, err := filepath.EvalSymlinks(filepath.Dir(target))
		return filepath.Join(dir, filepath.Base(target)), true, err
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, err
	}
	existing, rest := target, ""
	for {
		parent := filepath.Dir(existing)
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
		if _, err := os.Stat(existing); err == nil {
			break
		}
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", false, err
	}
	return filepath.Join(real, rest), true, nil
}

// Resolver is a namespace whose name lookups end on this machine: hosts is
// its /etc/hosts (the pod runner's, naming Services as cluster DNS would),
// its resolv.conf names only 127.0.0.1 and its nsswitch.conf reads files
// first, so a name missing from hosts never leaves the machine. The two
// files are written in dir, which also holds the namespace's scratch
// directory.
func Resolver(dir, hosts string) (Namespace, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Namespace{}, err
	}
	ns := Namespace{Binds: []Bind{{Source: hosts, Target: "/etc/hosts"}}, Scratch: filepath.Join(dir, "scratch")}
	for target, content := range map[string]string{
		"/etc/resolv.conf":   "# barometer e2e: no DNS beyond this machine\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
		"/etc/nsswitch.conf": "hosts: files dns\n",
	} {
		src := filepath.Join(dir, filepath.Base(target))
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			return Namespace{}, err
		}
		ns.Binds = append(ns.Binds, Bind{Source: src, Target: target})
	}
	return ns, nil
}
