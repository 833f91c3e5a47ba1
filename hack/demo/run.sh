#!/bin/sh
# make demo: install everything the lab needs, then run the default plan.
#
# Set-up is `make build envoy generators ztunnel linkerd-proxy`: each part
# installs or says why it cannot, and the demo stops there rather than run
# a mesh without its real proxy. Then, as root, examples/quick.yaml: none,
# sidecar, ambient, waypoint and linkerd on the netns substrate. Without
# root, what an unprivileged user namespace can run (none, ambient and
# waypoint on netns; the sidecars' uid 1337 and linkerd2-proxy's 2102
# cannot be mapped there), or, without user namespaces, the loopback lab;
# either way the line before the plan says what was left out.
#
# The plan asks for control_plane auto: each mesh from its own control
# plane (istiod; Linkerd's controllers; each against a lab API server)
# where they are built here, else meshbench's own configs. The demo builds
# neither: from empty caches that costs more than the whole set-up, so a
# fresh machine's demo runs the lab's own, and the plan's first line says
# so per mesh and what would build the rest (docs/getting-started.md,
# docs/platforms/netns.md).
#
# Env: MAKE (make), BIN (bin/meshbench).
set -eu
MAKE=${MAKE:-make}
BIN=${BIN:-bin/meshbench}
cd "$(dirname "$0")/../.."

now() { date +%s; }
took() { s=$(( $(now) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

start=$(now)
echo "make demo: set-up: meshbench, Envoy, the load generators, Istio's ztunnel, Linkerd's linkerd2-proxy"
$MAKE --no-print-directory build envoy generators ztunnel linkerd-proxy
setup=$(took "$start")
echo "make demo: set-up took $setup"

# The plan's settings, for the runs without root (a plan file takes no
# axes from flags): examples/quick.yaml's, with fewer meshes.
quick="--app static --rate 50,200 --replicas 1 --policies 0 --repetitions 3 --duration 5s --warmup 1s --drain 1s --connections 16 --sample-interval 1s"

plan_start=$(now)
status=0
if [ "$(id -u)" = 0 ]; then
	echo "make demo: each mesh from its own control plane where it is built here (make k8s-tools istio-tools linkerd-tools: about 20 min from empty caches, and a minute more of plan), else from meshbench's own configs: the plan's first line says which"
	"$BIN" bench examples/quick.yaml || status=$?
elif [ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" != 0 ]; then
	echo "make demo: not root: none, ambient and waypoint run in an unprivileged user namespace; left out: sidecar and linkerd (their proxies run as uid 1337 and 2102, which a user namespace of yours cannot map): run make demo as root for them"
	# shellcheck disable=SC2086
	"$BIN" bench --mesh none,ambient,waypoint --substrate netns $quick || status=$?
else
	echo "make demo: not root and no user namespaces (user.max_user_namespaces = 0): the loopback lab, Envoy standing in for ztunnel; left out: linkerd (it runs only on network namespaces): run make demo as root for the real meshes"
	# shellcheck disable=SC2086
	"$BIN" bench --mesh none,sidecar,ambient,waypoint --substrate loopback $quick || status=$?
fi
echo "make demo: set-up took $setup, the plan $(took "$plan_start")"
exit "$status"
