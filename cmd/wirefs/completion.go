package main

import (
	"github.com/spf13/cobra"
)

const completionLong = `Print a script that completes wirefs commands, options, -o option names
and mount points in SHELL: bash, zsh or fish.

  bash:  source <(wirefs completion bash)
         (or save it as /etc/bash_completion.d/wirefs)
  zsh:   wirefs completion zsh > "${fpath[1]}/_wirefs"
  fish:  wirefs completion fish > ~/.config/fish/completions/wirefs.fish
`

func completionCommand() *cobra.Command {
	return setup(&cobra.Command{
		Use:       "completion bash|zsh|fish",
		Short:     "print a shell completion script",
		Long:      completionLong,
		ValidArgs: []cobra.Completion{"bash", "zsh", "fish"},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(c, "want one SHELL (bash, zsh or fish), got %s", arguments(len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			root, w := c.Root(), c.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, true)
			}
			return usageErrorf(c, "no completion for shell %q (bash, zsh or fish)", args[0])
		},
	})
}
