import Foundation
import Glibc
import Testing

/// Running real shells (bash, zsh, fish, python3) and the project's scripts from tests.
enum ShellHarness {
    /// The repository root (Tests/IceboxCLITests/ShellHarness.swift → ../..).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The absolute path of a program on PATH, or nil.
    static func which(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(dir)/\(program)") {
            return "\(dir)/\(program)"
        }
        return nil
    }

    static func missing(_ program: String) -> String {
        "\(program) is not installed (scripts/test installs it: scripts/lib/setup.sh)"
    }

    /// Runs a program with the given environment; waits at most `timeout` seconds.
    static func run(_ argv: [String], environment: [String: String], timeout: Double = 30) throws -> Sandbox.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0].hasPrefix("/") ? argv[0] : which(argv[0]) ?? argv[0])
        p.arguments = Array(argv.dropFirst())
        p.environment = environment
        return try Sandbox.runToEnd(p, timeout: timeout, what: argv.joined(separator: " "))
    }

    /// Splits the output of the completion drivers below: "== LINE" then one candidate a line.
    static func sections(_ output: String) -> [String: [String]] {
        var out: [String: [String]] = [:]
        var current: String?
        for line in output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("== ") {
                current = String(line.dropFirst(3))
                out[current!] = []
            } else if let current, !line.isEmpty {
                out[current]!.append(line)
            }
        }
        return out
    }

    /// Drives a bash completion function as readline does: the line is split into COMP_WORDS
    /// at blanks and at '=' and ':' (the default COMP_WORDBREAKS), COMP_CWORD, COMP_LINE and
    /// COMP_POINT are set, the function registered for the command is called with the
    /// command, the current word and the previous one, and COMPREPLY is printed.
    /// Usage: bash driver.bash SCRIPT LINE...
    static let bashDriver = #"""
        [[ -f /usr/share/bash-completion/bash_completion ]] && source /usr/share/bash-completion/bash_completion
        source "$1"
        shift
        complete_line() {
            local line=$1 word= c i
            COMP_WORDS=()
            for ((i = 0; i < ${#line}; i++)); do
                c=${line:i:1}
                if [[ $c == [[:space:]] ]]; then
                    [[ -n $word ]] && COMP_WORDS+=("$word")
                    word=
                elif [[ $c == [=:] ]]; then
                    [[ -n $word && $word != [=:]* ]] && { COMP_WORDS+=("$word"); word=; }
                    word+=$c
                else
                    [[ $word == [=:]* ]] && { COMP_WORDS+=("$word"); word=; }
                    word+=$c
                fi
            done
            COMP_WORDS+=("$word")
            COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            COMP_LINE=$line
            COMP_POINT=${#line}
            COMPREPLY=()
            local cur=${COMP_WORDS[COMP_CWORD]} spec func
            [[ $cur == [=:] ]] && cur=
            spec=$(complete -p "${COMP_WORDS[0]##*/}") || return
            func=${spec#*-F }
            func=${func%% *}
            "$func" "${COMP_WORDS[0]}" "$cur" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
            ((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort -u
        }
        for line in "$@"; do
            echo "== $line"
            complete_line "$line"
        done
        """#

    /// Completes each line in a real interactive zsh on a pseudo-terminal: every match the
    /// completion functions add is written to a file (compadd wrapped), then the shell exits.
    /// Usage: zsh -f driver.zsh FPATH-DIR LINE...
    static let zshDriver = #"""
        zmodload zsh/zpty
        local dir=$1 out=$1/.matches line
        shift
        for line in "$@"; do
            : >| $out
            zpty z zsh -f -i
            zpty -w z "fpath=(${(q)dir} \$fpath); autoload -U compinit; compinit -u -d ${(q)dir}/.zcompdump"
            zpty -w z "compadd() { if [[ \${(j: :)@} == (|* )-[OAD]( *|) ]]; then builtin compadd \"\$@\"; return; fi; local -a __m; builtin compadd -O __m \"\$@\"; print -rl -- \$__m >> ${(q)out}; builtin compadd \"\$@\"; }"
            zpty -w z 'comppostfuncs=(exit)'
            zpty -w -n z "$line"$'\t'
            while zpty -r z _; do :; done
            zpty -d z
            print -r -- "== $line"
            sort -u $out
        done
        """#
}
