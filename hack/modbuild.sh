# Sourced by hack/capi-assets.sh, hack/ccmcsi-assets.sh and
# hack/kubeovn-assets.sh: builds a main package of a module served by the
# Go module proxy, at an exact version, inside a scratch module, into a
# folder of the cache (need), or the programs of several such modules in
# one (need_together). The caller sets CACHE (the cache root) and ROOT (the
# folder need's build folders go under) and defines say and fail.
#
# The replace directives of a dependency's go.mod do not apply in the
# scratch module, so it repeats those of the built module that name a
# published version (a local path has none and is left out); the caller
# adds its own after them.

# built BIN MODULE VERSION: BIN exists and go version -m says it was built
# from MODULE at VERSION (read whole before matching; see kube-assets.sh).
built() {
	local info
	[[ -x "$1" ]] && info="$(go version -m "$1" 2>/dev/null)" &&
		grep -qE "^[[:space:]]+mod[[:space:]]+$2[[:space:]]+$3([[:space:]]|\$)" <<<"$info"
}

scratch="$(mktemp -d "${TMPDIR:-/tmp}/pxsubstrate-build.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

# own_replaces MODULE VERSION prints, one a line, go mod edit's -replace
# flags for the replace directives of MODULE@VERSION's go.mod that name a
# published version (a local path has no version and is left out).
own_replaces() {
	local gomod
	gomod="$(cd "$scratch" && go mod download -json "$1@$2" | sed -n 's|^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$|\1|p')"
	[[ -n "$gomod" ]] || fail "cannot download the go.mod of $1@$2"
	go mod edit -print "$gomod" | awk '
		/^replace \($/ { block = 1; next }
		block && /^\)$/ { block = 0; next }
		block || /^replace / {
			sub(/^replace /, ""); sub(/[[:space:]]*\/\/.*/, "")
			n = split($0, f, /[[:space:]]+=>[[:space:]]+/)
			split(f[1], old, " "); split(f[2], new, " ")
			if (n == 2 && new[2] != "") print "-replace=" old[1] (old[2] != "" ? "@" old[2] : "") "=" new[1] "@" new[2]
		}'
}

# need DIR NAME MODULE VERSION PACKAGE [REPLACE...] builds PACKAGE of
# MODULE@VERSION into $ROOT/DIR/NAME inside a scratch module with the
# module's own replace directives and then the REPLACE flags (go mod edit's
# -replace=OLD=NEW@VERSION), unless a binary that go version -m shows as
# MODULE@VERSION is already there.
need() {
	local out="$ROOT/$1" name="$2" module="$3" version="$4" pkg="$5" dir="$scratch/$1" start=$SECONDS replaces
	shift 5
	built "$out/$name" "$module" "$version" && return
	say "building $name ($module $version) into $out (once; a few minutes on 2 cores)"
	mkdir -p "$dir" "$out"
	printf 'module scratch/%s\n\ngo 1.26\n\nrequire %s %s\n' "$name" "$module" "$version" >"$dir/go.mod"
	replaces="$(own_replaces "$module" "$version")"
	set -- $replaces "$@" # one flag a line, none with spaces
	if (($#)); then (cd "$dir" && go mod edit "$@"); fi
	(cd "$dir" && go get "$pkg@$version" >"$scratch/get.log" 2>&1) ||
		{ cat "$scratch/get.log" >&2; fail "go get $pkg@$version failed"; }
	(cd "$dir" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$out/$name.new" "$pkg")
	mv "$out/$name.new" "$out/$name"
	built "$out/$name" "$module" "$version" || fail "the built $name does not report $module $version"
	say "built $name in $((SECONDS - start)) s"
}

# need_together LABEL ENTRY... [-- REPLACE...] builds the programs of
# several modules whose Kubernetes libraries share a minor in ONE scratch
# module, so the go command resolves one set of dependencies for all of
# them and compiles each shared package once instead of once per program
# (docs/performance.md measures it). An ENTRY is DIR|NAME|MODULE|VERSION|PACKAGE,
# DIR under $CACHE (the cache root, not ROOT: a group may fill the folders
# of another script); the scratch module requires every ENTRY's module at
# its pinned version, repeats their own replace directives (two that
# disagree fail the build) and then the REPLACE flags. Each program is
# still MODULE at VERSION (go version -m checks it); a shared dependency may
# be a newer patch release than the program's go.mod asks for, as minimal
# version selection picks it. Only the programs not built yet are built,
# but always against the whole group's dependencies, so a program is the
# same whichever of its neighbours was built first.
need_together() {
	local label="$1" dir="$scratch/$1" start=$SECONDS entry out name module version pkg old
	shift
	local -a entries=() extra=() missing=() gets=() names=() replaces=()
	while (($#)) && [[ "$1" != -- ]]; do
		entries+=("$1")
		shift
	done
	if (($#)); then shift; fi
	extra=("$@")
	for entry in "${entries[@]}"; do
		IFS='|' read -r out name module version pkg <<<"$entry"
		gets+=("$pkg@$version")
		built "$CACHE/$out/$name" "$module" "$version" || { missing+=("$entry") && names+=("$name"); }
	done
	((${#missing[@]})) || return 0
	say "building ${names[*]} ($label, in one module) into $CACHE (once; a few minutes on 2 cores)"
	mkdir -p "$dir"
	printf 'module scratch/%s\n\ngo 1.26\n' "$label" >"$dir/go.mod"
	for entry in "${entries[@]}"; do
		IFS='|' read -r out name module version pkg <<<"$entry"
		mapfile -t -O "${#replaces[@]}" replaces < <(own_replaces "$module" "$version")
	done
	mapfile -t replaces < <(printf '%s\n' "${replaces[@]}" | sed '/^$/d' | sort -u)
	old="$(printf '%s\n' "${replaces[@]}" | sed -n 's/^-replace=\([^=]*\)=.*/\1/p' | sort | uniq -d)"
	[[ -z "$old" ]] || fail "the modules of $label replace $old differently; build them apart (need)"
	if ((${#replaces[@]} + ${#extra[@]})); then (cd "$dir" && go mod edit "${replaces[@]}" "${extra[@]}"); fi
	(cd "$dir" && go get "${gets[@]}" >"$scratch/get.log" 2>&1) ||
		{ cat "$scratch/get.log" >&2; fail "go get ${gets[*]} failed"; }
	for entry in "${missing[@]}"; do
		IFS='|' read -r out name module version pkg <<<"$entry"
		mkdir -p "$CACHE/$out"
		(cd "$dir" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$CACHE/$out/$name.new" "$pkg")
		mv "$CACHE/$out/$name.new" "$CACHE/$out/$name"
		built "$CACHE/$out/$name" "$module" "$version" || fail "the built $name does not report $module $version"
	done
	say "built ${names[*]} in $((SECONDS - start)) s"
}
