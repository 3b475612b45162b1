package main

// Shell completion: "dflockd completion bash|zsh" prints a script that
// completes the commands and every flag of the flag table (flagtable.go),
// with the values a flag takes where they are known: the choices of
// --compat and --log-format, files for a FILE, directories for a DIR,
// true or false after a boolean's =. The scripts are generated from the
// table, so a new flag is completed without touching them.

import (
	"fmt"
	"io"
	"strings"
)

const completionUsage = `usage: dflockd completion bash|zsh

Prints a shell completion script for dflockd's commands and flags:
  source <(dflockd completion bash)                      # in ~/.bashrc
  dflockd completion zsh > "${fpath[1]}/_dflockd"        # zsh, then compinit
`

// completionScripts are the templates, by shell.
var completionScripts = map[string]string{"bash": bashCompletion, "zsh": zshCompletion}

func runCompletion(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		return usageError(stderr, "completion: name a shell, bash or zsh (usage: dflockd completion bash|zsh)")
	case len(args) > 1:
		return usageError(stderr, "completion: unexpected argument %q (usage: dflockd completion bash|zsh)", args[1])
	}
	script, ok := completionScripts[args[0]]
	if !ok {
		return usageError(stderr, "completion: unknown shell %q; want bash or zsh", args[0])
	}
	io.WriteString(stdout, fillCompletion(script))
	return 0
}

// fillCompletion puts the flag table into a script template: @COMMANDS@,
// @FLAGS@ (every long flag) and @VALUEFLAGS@ (those taking a value) as
// space-separated words, @HEALTHFLAGS@ and @HEALTHVALUEFLAGS@ likewise
// for dflockd health (healthFlags), and @CASES@ as shell case arms, valid in bash
// and zsh alike, setting kind (file, dir) or choices per flag.
func fillCompletion(script string) string {
	var flags, valueFlags, files, dirs, bools []string
	var choices []string // case arms
	arm := func(name string, values []string) {
		choices = append(choices, fmt.Sprintf("        --%s) choices=%q ;;", name, strings.Join(values, " ")))
	}
	add := func(name, arg string, isBool bool, values []string) {
		flags = append(flags, "--"+name)
		switch {
		case isBool:
			bools = append(bools, "--"+name)
			return
		case arg == "":
			return // a manual setting without a value
		}
		valueFlags = append(valueFlags, "--"+name)
		switch {
		case len(values) > 0:
			arm(name, values)
		case arg == "FILE":
			files = append(files, "--"+name)
		case arg == "DIR":
			dirs = append(dirs, "--"+name)
		}
	}
	for _, g := range settingGroups {
		for _, s := range g.settings {
			values := s.choices
			if s.kind == kindCompat {
				values = []string{compatV2, compatV1, compatRF}
			}
			add(s.flag, s.arg, s.kind == kindBool || s.kind == kindManualBool, values)
		}
	}
	for _, u := range unsupportedFlags {
		add(u.flag, u.arg, u.isBool, nil)
	}
	var healthNames, healthValues []string
	for _, f := range healthFlags {
		healthNames = append(healthNames, "--"+f.name)
		if f.value {
			healthValues = append(healthValues, "--"+f.name)
		}
	}
	cases := choices
	if len(files) > 0 {
		cases = append(cases, "        "+strings.Join(files, "|")+") kind=file ;;")
	}
	if len(dirs) > 0 {
		cases = append(cases, "        "+strings.Join(dirs, "|")+") kind=dir ;;")
	}
	if len(bools) > 0 {
		cases = append(cases, "        "+strings.Join(bools, "|")+`) [[ -n "$eq" ]] && choices="true false" ;;`)
	}
	return strings.NewReplacer(
		"@COMMANDS@", strings.Join(commandNames(), " "),
		"@FLAGS@", strings.Join(flags, " "),
		"@VALUEFLAGS@", strings.Join(valueFlags, " "),
		"@CASES@", strings.Join(cases, "\n"),
		"@HEALTHFLAGS@", strings.Join(healthNames, " "),
		"@HEALTHVALUEFLAGS@", strings.Join(healthValues, " "),
	).Replace(script)
}

// Both scripts' candidate helpers take the word being completed and the
// words before it (the command's name left out). They find the flag whose
// value is being completed: the word before, if it takes a value, or the
// name before an = (bash splits "--compat=v" into "--compat", "=", "v";
// zsh does not). A flag written with one dash counts as with two. Else
// they offer the commands as the first word, a shell after "completion",
// a command after "help", health's flags after "health" (nothing after
// one of them that takes a value: --compat's and --auth-token-file's are
// the server flags' own), and the flags anywhere else.
const bashCompletion = `# bash completion for dflockd: source <(dflockd completion bash)
__dflockd_candidates() {
    local cur="$1"; shift
    local n=$# prev="" flag="" pre="" eq="" kind="" choices=""
    [ $n -gt 0 ] && prev="${!n}"
    if [ "$cur" = "=" ] && [ $n -gt 0 ]; then
        flag="$prev"; cur=""; eq=1
    elif [ "$prev" = "=" ] && [ $n -gt 1 ]; then
        local i=$((n - 1)); flag="${!i}"; eq=1
    elif [[ "$cur" == -*=* ]]; then
        flag="${cur%%=*}"; pre="$flag="; cur="${cur#*=}"; eq=1
    else
        flag="$prev"
    fi
    [[ "$flag" == -[!-]* ]] && flag="-$flag"
    if [ -n "$eq" ] || [[ " @VALUEFLAGS@ " == *" $flag "* ]]; then
        case "$flag" in
@CASES@
        esac
        case "$kind" in
            file) compgen -P "$pre" -f -- "$cur" ;;
            dir) compgen -P "$pre" -d -- "$cur" ;;
            *) if [ -n "$choices" ]; then compgen -P "$pre" -W "$choices" -- "$cur"; fi ;;
        esac
        return
    fi
    if [ $n -eq 0 ] && [[ "$cur" != -* ]]; then
        compgen -W "@COMMANDS@" -- "$cur"; return
    fi
    case "$1" in
        completion) if [ $n -eq 1 ]; then compgen -W "bash zsh" -- "$cur"; fi; return ;;
        help) if [ $n -eq 1 ]; then compgen -W "@COMMANDS@" -- "$cur"; fi; return ;;
        health) [[ " @HEALTHVALUEFLAGS@ " == *" $prev "* ]] || compgen -W "@HEALTHFLAGS@" -- "$cur"; return ;;
        version) return ;;
    esac
    compgen -W "@FLAGS@" -- "$cur"
}
_dflockd() {
    COMPREPLY=($(__dflockd_candidates "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[@]:1:COMP_CWORD-1}"))
}
complete -o default -F _dflockd dflockd
`

const zshCompletion = `#compdef dflockd
# zsh completion for dflockd: dflockd completion zsh > "${fpath[1]}/_dflockd"
__dflockd_candidates() {
    local cur="$1"; shift
    local n=$# prev="" flag="" pre="" eq="" kind="" choices=""
    reply=()
    (( n > 0 )) && prev="${argv[n]}"
    if [[ "$cur" == -*=* ]]; then
        flag="${cur%%=*}"; pre="$flag="; cur="${cur#*=}"; eq=1
    else
        flag="$prev"
    fi
    [[ "$flag" == -[^-]* ]] && flag="-$flag"
    if [[ -n "$eq" || " @VALUEFLAGS@ " == *" $flag "* ]]; then
        case "$flag" in
@CASES@
        esac
        case "$kind" in
            file) reply=(FILE) ;;
            dir) reply=(DIR) ;;
            *) [[ -n "$choices" ]] && reply=("$pre"${^=choices}) ;;
        esac
        return
    fi
    if (( n == 0 )) && [[ "$cur" != -* ]]; then
        reply=(@COMMANDS@); return
    fi
    case "$1" in
        completion) (( n == 1 )) && reply=(bash zsh); return ;;
        help) (( n == 1 )) && reply=(@COMMANDS@); return ;;
        health) [[ " @HEALTHVALUEFLAGS@ " == *" $prev "* ]] || reply=(@HEALTHFLAGS@); return ;;
        version) return ;;
    esac
    reply=(@FLAGS@)
}
_dflockd() {
    local -a reply
    __dflockd_candidates "${words[CURRENT]}" "${(@)words[2,CURRENT-1]}"
    case "${reply[1]}" in
        FILE) compset -P '*='; _files ;;
        DIR) compset -P '*='; _files -/ ;;
        *) compadd -a reply ;;
    esac
}
if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then
    _dflockd "$@"
else
    compdef _dflockd dflockd
fi
`
