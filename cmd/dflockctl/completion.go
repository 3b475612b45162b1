package main

import (
	"fmt"
	"slices"
	"strings"
)

const completionUsage = `usage: dflockctl completion bash|zsh

Prints a shell completion script for commands, subcommands and options:
  source <(dflockctl completion bash)                      # in ~/.bashrc
  dflockctl completion zsh > "${fpath[1]}/_dflockctl"      # zsh, then compinit`

// The completion tables: what may follow each command. Both scripts are
// generated from them, so they cannot drift apart.
var (
	completionSubs = map[string][]string{
		"kv":         {"get", "set", "del", "cas"},
		"counter":    {"get", "incr", "decr", "set"},
		"list":       {"push", "pop", "range", "len"},
		"file":       {"try", "acquire", "release", "status", "cleanup"},
		"completion": {"bash", "zsh"},
		"cluster":    {"add", "remove"},
		"snapshot":   {"save", "status"},
		"acl":        {"log", "whoami", "check"},
	}
	completionFlags = map[string][]string{
		"lock":     {"--timeout", "--lease", "--limit", "--keepalive", "--kill-on-lost"},
		"elect":    {"--timeout", "--lease", "--keepalive", "--kill-on-lost"},
		"kv":       {"--ttl"},
		"list":     {"--left", "--right", "--wait"},
		"listen":   {"--group", "--count", "--timeout"},
		"watch":    {"--count", "--timeout"},
		"observe":  {"--count", "--timeout"},
		"barrier":  {"--timeout"},
		"file":     {"--tag", "--stale", "--pid", "--timeout", "--verbose", "--force"},
		"cluster":  {"--admin-token", "--admin-token-file"},
		"snapshot": {"--admin-token", "--admin-token-file"},
		"top":      {"--interval"},
	}
	globalFlags = []string{"--server", "-h", "-p", "--endpoints", "--cluster", "--stable-ref", "--auth-token", "--auth-token-file", "--tls", "--tls-ca",
		"--tls-cert", "--tls-key", "--tls-server-name", "--tls-insecure", "--http", "--json", "--help"}
	// valueFlags take the next word as their value; pathFlags a path.
	valueFlags = []string{"--server", "-h", "-p", "--endpoints", "--stable-ref", "--auth-token", "--tls-server-name", "--http", "--admin-token", "--interval"}
	pathFlags  = []string{"--auth-token-file", "--tls-ca", "--tls-cert", "--tls-key", "--admin-token-file"}
)

func (c *cli) completion(_ *globals, args []string) int {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(c.stdout, completionUsage)
			return exitOK
		}
		return c.fail(exitUsage, "completion: want bash or zsh\n%s", completionUsage)
	}
	script := bashCompletion
	if args[0] == "zsh" {
		script = zshCompletion
	}
	fmt.Fprint(c.stdout, fillCompletion(script))
	return exitOK
}

// fillCompletion puts the tables into a script template: @COMMANDS@,
// @GLOBALS@, @VALUEFLAGS@, @FILEFLAGS@ as space-separated words, and
// @CASES@ as shell case arms setting subs and flags per command.
func fillCompletion(script string) string {
	var cases strings.Builder
	names := commandNames(false)
	for _, n := range names {
		subs, flags := completionSubs[n], completionFlags[n]
		if subs == nil && flags == nil {
			continue
		}
		fmt.Fprintf(&cases, "        %s) subs=%q; flags=%q ;;\n", n, strings.Join(subs, " "), strings.Join(flags, " "))
	}
	return strings.NewReplacer(
		"@COMMANDS@", strings.Join(names, " "),
		"@GLOBALS@", strings.Join(globalFlags, " "),
		"@VALUEFLAGS@", strings.Join(slices.Concat(valueFlags, pathFlags), " "),
		"@FILEFLAGS@", strings.Join(pathFlags, " "),
		"@CASES@", strings.TrimSuffix(cases.String(), "\n"),
	).Replace(script)
}

// Both scripts find the command (the first word that is neither an option
// nor an option's value) and its subcommand, then offer: a file after a
// path option, nothing after another option taking a value, options when
// the word starts with -, else the subcommands or the commands.
const bashCompletion = `# bash completion for dflockctl: source <(dflockctl completion bash)
__dflockctl_candidates() {
    local cur="$1" prev="$2"; shift 2
    local cmd="" sub="" w skip=0 subs="" flags=""
    for w in "$@"; do
        if [ $skip = 1 ]; then skip=0; continue; fi
        case " @VALUEFLAGS@ " in *" $w "*) skip=1; continue ;; esac
        case "$w" in -*) continue ;; esac
        if [ -z "$cmd" ]; then cmd="$w"; elif [ -z "$sub" ]; then sub="$w"; fi
    done
    case "$cmd" in
@CASES@
    esac
    case " @FILEFLAGS@ " in *" $prev "*) compgen -f -- "$cur"; return ;; esac
    case " @VALUEFLAGS@ " in *" $prev "*) return ;; esac
    if [[ "$cur" == -* ]]; then
        compgen -W "@GLOBALS@ $flags" -- "$cur"
    elif [ -z "$cmd" ]; then
        compgen -W "@COMMANDS@" -- "$cur"
    elif [ -n "$subs" ] && [ -z "$sub" ]; then
        compgen -W "$subs" -- "$cur"
    fi
}
_dflockctl() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev=""
    [ "$COMP_CWORD" -gt 0 ] && prev="${COMP_WORDS[COMP_CWORD-1]}"
    COMPREPLY=($(__dflockctl_candidates "$cur" "$prev" "${COMP_WORDS[@]:1:COMP_CWORD-1}"))
}
complete -o default -F _dflockctl dflockctl
`

const zshCompletion = `#compdef dflockctl
# zsh completion for dflockctl: dflockctl completion zsh > "${fpath[1]}/_dflockctl"
__dflockctl_candidates() {
    local cur="$1" prev="$2"; shift 2
    local cmd="" sub="" w skip=0 subs="" flags=""
    reply=()
    for w in "$@"; do
        if [[ $skip = 1 ]]; then skip=0; continue; fi
        if [[ " @VALUEFLAGS@ " == *" $w "* ]]; then skip=1; continue; fi
        [[ "$w" == -* ]] && continue
        if [[ -z "$cmd" ]]; then cmd="$w"; elif [[ -z "$sub" ]]; then sub="$w"; fi
    done
    case "$cmd" in
@CASES@
    esac
    if [[ " @FILEFLAGS@ " == *" $prev "* ]]; then reply=(FILE); return; fi
    if [[ " @VALUEFLAGS@ " == *" $prev "* ]]; then return; fi
    if [[ "$cur" == -* ]]; then
        reply=(${=:-@GLOBALS@ $flags})
    elif [[ -z "$cmd" ]]; then
        reply=(@COMMANDS@)
    elif [[ -n "$subs" && -z "$sub" ]]; then
        reply=(${=subs})
    fi
}
_dflockctl() {
    local -a reply
    __dflockctl_candidates "${words[CURRENT]}" "${words[CURRENT-1]}" "${(@)words[2,CURRENT-1]}"
    if [[ "${reply[1]}" == FILE ]]; then _files; else compadd -a reply; fi
}
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
    _dflockctl "$@"
else
    compdef _dflockctl dflockctl
fi
`
