# The collection of a task's branch, run by sh with the task's name as $1
# and $ws set to the task's clone (read-only). It writes the status of the
# clone on stderr, a line "status XY path" each, then a bundle of the
# branch agentbox/TASK, named TASK, on stdout.
#
# git never reads the clone's configuration, hooks or info/: it works in a
# repository of its own (a fresh config, no hooks) whose objects are the
# clone's (an alternate) and whose refs, HEAD and index are copies of the
# clone's regular files. The work tree's .gitattributes name filters and
# drivers that nothing configures; status ignores submodules (it would run
# git in each). Data only crosses: no program of the clone's runs.
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
g=$ws/.git
s=$(mktemp -d) || exit 1
export HOME="$s/home" XDG_CONFIG_HOME="$s/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
	GIT_ATTR_NOSYSTEM=1 GIT_DIR="$s/git" GIT_WORK_TREE="$ws" GIT_OPTIONAL_LOCKS=0 GIT_NO_REPLACE_OBJECTS=1 \
	GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat
mkdir -p "$HOME" "$GIT_DIR/objects/info" "$GIT_DIR/refs" || exit 1
if [ ! -d "$g" ] || [ -L "$g" ]; then
	echo "the clone's .git is not a directory" >&2
	exit 1
fi
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n' >"$GIT_DIR/config"
printf '%s/objects\n' "$g" >"$GIT_DIR/objects/info/alternates"
# Regular files only: a FIFO or a link to one would hold git forever.
for f in HEAD packed-refs index shallow; do
	if [ -f "$g/$f" ] && [ ! -L "$g/$f" ]; then cp "$g/$f" "$GIT_DIR/$f" || exit 1; fi
done
(cd "$g" && find refs -type f -exec cp --parents -t "$GIT_DIR" {} + &&
	find . -maxdepth 1 -name 'sharedindex.*' -type f -exec cp -t "$GIT_DIR" {} +) || exit 1
cd "$ws" || exit 1
git status --porcelain=v1 --untracked-files=all --ignore-submodules=all | sed 's/^/status /' >&2
set -e
git update-ref "refs/heads/$1" "refs/heads/agentbox/$1^{commit}"
git bundle create - "refs/heads/$1"
cd /
rm -rf "$s"
