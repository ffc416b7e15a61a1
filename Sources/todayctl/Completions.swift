import FoundationEssentials
import TodayCore

/// Shell completions for todayctl, made from the command table: the same
/// commands, operands and options that `--help` lists, for each shell in
/// its own idiom. Each shell's script counts the operands already typed
/// (skipping options and their values) and offers what the command's next
/// operand or the option before the cursor takes.
enum Completions {
    enum Shell: String, CaseIterable {
        case bash, zsh, fish
    }

    static func script(for shell: Shell, commands: [Command] = commands) -> String {
        switch shell {
        case .bash: bash(commands)
        case .zsh: zsh(commands)
        case .fish: fish(commands)
        }
    }

    /// Every option of `commands` and the global ones, each once, with what
    /// its value completes to.
    static func allOptions(_ commands: [Command]) -> [(name: String, value: Command.Completion?)] {
        var seen: Set<String> = []
        return (globalOptions + commands.flatMap(\.options)).filter { seen.insert($0.name).inserted }
    }

    /// Options that take a value, grouped by what the value completes to.
    static func valueOptions(_ commands: [Command]) -> [(Command.Completion, [String])] {
        var groups: [(Command.Completion, [String])] = []
        for (name, value) in allOptions(commands) {
            guard let value else { continue }
            if let index = groups.firstIndex(where: { $0.0 == value }) {
                groups[index].1.append(name)
            } else {
                groups.append((value, [name]))
            }
        }
        return groups
    }

    /// `(pattern, completion)` for each operand: `command:index`, and
    /// `command:*` for one that repeats (after the fixed ones, which a
    /// shell's `case` tries first).
    static func operandCases(_ commands: [Command]) -> [(String, Command.Completion)] {
        commands.flatMap { command in
            command.operands.enumerated().map { index, completion in
                let last = index == command.operands.count - 1
                return ("\(command.name):\(last && command.repeats ? "*" : String(index))", completion)
            }
        }
    }

    /// The loop, the same in bash and zsh, that reads the words before the
    /// cursor (`words[first]` up to `words[limit - 1]`) into `command`,
    /// `operand` (how many of its operands) and `address`, skipping options
    /// and their values.
    static func countOperands(_ commands: [Command], from first: Int, before limit: String) -> [String] {
        let skipped = valueOptions(commands).flatMap(\.1).filter { $0 != "--address" }
        return [
            "    for ((i = \(first); i < \(limit); i++)); do",
            "        case ${words[i]} in",
            "        --address) address=${words[i + 1]}; ((i++)) ;;",
            "        \(skipped.joined(separator: " | "))) ((i++)) ;;",
            "        -*) ;;",
            "        *) if [[ -z $command ]]; then command=${words[i]}; else ((operand++)); fi ;;",
            "        esac",
            "    done",
        ]
    }

    static func optionWords(_ command: Command) -> String {
        (command.options.map(\.name) + globalOptions.map(\.name)).joined(separator: " ")
    }

    // MARK: bash

    static func bash(_ commands: [Command]) -> String {
        func offer(_ completion: Command.Completion) -> String {
            switch completion {
            case .free: ":"
            case .widget: "COMPREPLY=($(compgen -W \"$(_todayctl_widgets)\" -- \"$cur\"))"
            case .file: "_filedir"
            case .folder: "_filedir -d"
            case .words(let words): "COMPREPLY=($(compgen -W \"\(words.joined(separator: " "))\" -- \"$cur\"))"
            }
        }
        var lines = [
            "# bash completion for todayctl, made by `todayctl completions bash`.",
            "",
            "_todayctl_widgets() {",
            "    todayctl ${address:+--address \"$address\"} list 2>/dev/null | cut -f1",
            "}",
            "",
            "_todayctl() {",
            "    local cur prev words cword address=\"\"",
            "    _init_completion || return",
            "    local i command=\"\" operand=0",
        ]
        lines += countOperands(commands, from: 1, before: "cword")
        lines.append("    case $prev in")
        for (completion, names) in valueOptions(commands) {
            lines.append("    \(names.joined(separator: " | "))) \(offer(completion)); return ;;")
        }
        lines += [
            "    esac",
            "    if [[ -z $command ]]; then",
            "        COMPREPLY=($(compgen -W \"\((commands.map(\.name) + globalOptions.map(\.name)).joined(separator: " "))\" -- \"$cur\"))",
            "        return",
            "    fi",
            "    if [[ $cur == -* ]]; then",
            "        case $command in",
        ]
        for command in commands {
            lines.append("        \(command.name)) COMPREPLY=($(compgen -W \"\(optionWords(command))\" -- \"$cur\")) ;;")
        }
        lines += ["        esac", "        return", "    fi", "    case $command:$operand in"]
        for (pattern, completion) in operandCases(commands) where completion != .free {
            lines.append("    \(pattern)) \(offer(completion)) ;;")
        }
        lines += ["    esac", "}", "complete -F _todayctl todayctl", ""]
        return lines.joined(separator: "\n")
    }

    // MARK: zsh

    static func zsh(_ commands: [Command]) -> String {
        func offer(_ completion: Command.Completion) -> String {
            switch completion {
            case .free: ":"
            case .widget: "_todayctl_widgets"
            case .file: "_files"
            case .folder: "_files -/"
            case .words(let words): "compadd -- \(words.joined(separator: " "))"
            }
        }
        /// A `name:description` word for _describe, single-quoted.
        func described(_ command: Command) -> String {
            let text = "\(command.name):\(command.summary.replacing(":", with: "\\:"))"
            return "'" + text.replacing("'", with: "'\\''") + "'"
        }
        var lines = [
            "#compdef todayctl",
            "# zsh completion for todayctl, made by `todayctl completions zsh`.",
            "",
            "_todayctl_widgets() {",
            "    local -a ids",
            "    ids=(${(f)\"$(todayctl ${address:+--address \"$address\"} list 2>/dev/null | cut -f1)\"})",
            "    compadd -a ids",
            "}",
            "",
            "_todayctl() {",
            "    local i command=\"\" operand=0 address=\"\"",
        ]
        lines += countOperands(commands, from: 2, before: "CURRENT")
        lines.append("    case ${words[CURRENT - 1]} in")
        for (completion, names) in valueOptions(commands) {
            lines.append("    \(names.joined(separator: " | "))) \(offer(completion)); return ;;")
        }
        lines += [
            "    esac",
            "    if [[ -z $command ]]; then",
            "        local -a described",
            "        described=(",
        ]
        lines += commands.map { "            \(described($0))" }
        lines += [
            "        )",
            "        _describe -t commands 'todayctl command' described",
            "        compadd -- \(globalOptions.map(\.name).joined(separator: " "))",
            "        return",
            "    fi",
            "    if [[ ${words[CURRENT]} == -* ]]; then",
            "        case $command in",
        ]
        for command in commands {
            lines.append("        \(command.name)) compadd -- \(optionWords(command)) ;;")
        }
        lines += ["        esac", "        return", "    fi", "    case $command:$operand in"]
        for (pattern, completion) in operandCases(commands) where completion != .free {
            lines.append("    \(pattern)) \(offer(completion)) ;;")
        }
        lines += [
            "    esac",
            "}",
            "",
            "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then",
            "    _todayctl \"$@\"",
            "else",
            "    compdef _todayctl todayctl",
            "fi",
            "",
        ]
        return lines.joined(separator: "\n")
    }

    // MARK: fish

    static func fish(_ commands: [Command]) -> String {
        func quoted(_ text: String) -> String {
            "'" + text.replacing("\\", with: "\\\\").replacing("'", with: "\\'") + "'"
        }
        /// The arguments of `complete` that offer `completion`.
        func offer(_ completion: Command.Completion) -> String {
            switch completion {
            case .free: "-x"
            case .widget: "-x -a '(__todayctl_widgets)'"
            case .file: "-r -F"
            case .folder: "-x -a '(__fish_complete_directories (commandline -ct))'"
            case .words(let words): "-x -a \(quoted(words.joined(separator: " ")))"
            }
        }
        func option(_ name: String, _ value: Command.Completion?, when condition: String?) -> String {
            let only = condition.map { " -n \(quoted($0))" } ?? ""
            return "complete -c todayctl\(only) -l \(name.dropFirst(2))" + (value.map { " " + offer($0) } ?? "")
        }
        let skipped = valueOptions(commands).flatMap(\.1)
        var lines = [
            "# fish completion for todayctl, made by `todayctl completions fish`.",
            "",
            "# The command typed so far and how many of its operands, one per line.",
            "function __todayctl_state",
            "    set -l tokens (commandline -opc)",
            "    set -l command ''",
            "    set -l operand 0",
            "    set -l skip 0",
            "    for token in $tokens[2..-1]",
            "        if test $skip = 1",
            "            set skip 0",
            "            continue",
            "        end",
            "        switch $token",
            "            case \(skipped.joined(separator: " "))",
            "                set skip 1",
            "            case '-*'",
            "            case '*'",
            "                if test -z \"$command\"",
            "                    set command $token",
            "                else",
            "                    set operand (math $operand + 1)",
            "                end",
            "        end",
            "    end",
            "    echo $command",
            "    echo $operand",
            "end",
            "",
            "# Whether the cursor is at COMMAND's operand N (N+: N or later; none: anywhere).",
            "function __todayctl_at",
            "    set -l state (__todayctl_state)",
            "    test \"$state[1]\" = \"$argv[1]\"; or return 1",
            "    test (count $argv) -lt 2; and return 0",
            "    switch $argv[2]",
            "        case '*+'",
            "            test $state[2] -ge (string trim -r -c + -- $argv[2])",
            "        case '*'",
            "            test $state[2] = $argv[2]",
            "    end",
            "end",
            "",
            "function __todayctl_widgets",
            "    todayctl list 2>/dev/null | cut -f1",
            "end",
            "",
            "complete -c todayctl -f",
        ]
        for (name, value) in globalOptions { lines.append(option(name, value, when: nil)) }
        for command in commands {
            lines.append("complete -c todayctl -n '__todayctl_at \"\"' -a \(command.name) -d \(quoted(command.summary))")
        }
        for command in commands {
            for (name, value) in command.options { lines.append(option(name, value, when: "__todayctl_at \(command.name)")) }
            for (index, completion) in command.operands.enumerated() where completion != .free {
                let last = index == command.operands.count - 1
                let position = last && command.repeats ? "\(index)+" : "\(index)"
                lines.append("complete -c todayctl -n \(quoted("__todayctl_at \(command.name) \(position)")) \(offer(completion))")
            }
        }
        lines.append("")
        return lines.joined(separator: "\n")
    }
}

/// `todayctl completions SHELL`.
func printCompletions(_ arguments: [String]) throws {
    guard arguments.count == 1, let shell = Completions.Shell(rawValue: arguments[0]) else {
        throw Failure.usage("completions takes one of \(Completions.Shell.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    FileSystem.writeAll(1, Completions.script(for: shell))
}
