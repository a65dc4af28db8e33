//! The credentials under the home directory a sandboxed command must not
//! read, found two ways: where the common developer tools keep theirs
//! ([`KNOWN`], each row with the documentation it comes from), and by name
//! anywhere in the home directory's dot-directories and the XDG directories
//! ([`looks_secret`]: `*token*`, `*credential*`, `*secret*`, `*.pem`, `id_*`,
//! …). The sandbox hides each under an empty read-only mount (a directory)
//! or `/dev/null` (a file).
//!
//! Why both: a list is the attacks someone thought of (a review read the
//! Hugging Face token under `~/.cache`, Gemini CLI's OAuth file, Copilot's
//! token, Kaggle's key and rclone's config past a list of thirty), and a
//! name search alone misses a store named for its tool (`~/.docker`). Where
//! neither is enough, `home: hidden` shows a command only what `read:` names.
//!
//! The search is bounded ([`MAX_ENTRIES`], [`MAX_DEPTH`], [`TIME_BUDGET`]),
//! breadth first so shallow stores come first, and skips bulky trees that
//! hold packages, not secrets ([`BULKY`]). Its answer is kept
//! ([`Discovered`]) with every directory it read and that directory's
//! change time (which no process sets back); a later sandbox start `stat`s those directories and
//! searches again only when one moved, so the per-call cost is a few hundred
//! `statx` when nothing changed.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which directory a [`Known`] path is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// The home directory.
    Home,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    Config,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    Data,
    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    Cache,
}

/// One well-known credential store.
#[derive(Debug)]
pub struct Known {
    /// What it is relative to.
    pub base: Base,
    /// The file or directory.
    pub path: &'static str,
    /// The tool that keeps it.
    pub tool: &'static str,
    /// Where its documentation says so.
    pub docs: &'static str,
}

const fn known(base: Base, path: &'static str, tool: &'static str, docs: &'static str) -> Known {
    Known { base, path, tool, docs }
}

use Base::{Cache, Config, Data, Home};

/// Where common developer tools keep credentials: cloud CLIs, AI agents,
/// package and container registries, git hosting, databases, password
/// managers, remote access, browsers, shell histories.
pub const KNOWN: &[Known] = &[
    // Remote access and signing.
    known(Home, ".ssh", "OpenSSH", "https://man.openbsd.org/ssh#FILES"),
    known(
        Home,
        ".gnupg",
        "GnuPG",
        "https://www.gnupg.org/documentation/manuals/gnupg/GPG-Configuration.html",
    ),
    known(
        Home,
        ".vnc",
        "TigerVNC (vncpasswd)",
        "https://tigervnc.org/doc/vncpasswd.html",
    ),
    known(
        Data,
        "remmina",
        "Remmina",
        "https://gitlab.com/Remmina/Remmina/-/wikis/Usage/Remmina-user's-guide",
    ),
    known(
        Config,
        "filezilla",
        "FileZilla",
        "https://wiki.filezilla-project.org/Client_Configuration",
    ),
    known(
        Home,
        ".netrc",
        "curl, ftp, git over HTTP (netrc)",
        "https://everything.curl.dev/usingcurl/netrc",
    ),
    known(
        Home,
        ".authinfo",
        "Emacs auth-source",
        "https://www.gnu.org/software/emacs/manual/html_mono/auth.html",
    ),
    known(
        Home,
        ".authinfo.gpg",
        "Emacs auth-source",
        "https://www.gnu.org/software/emacs/manual/html_mono/auth.html",
    ),
    // Cloud CLIs.
    known(
        Home,
        ".aws",
        "AWS CLI",
        "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html",
    ),
    known(
        Home,
        ".azure",
        "Azure CLI",
        "https://learn.microsoft.com/en-us/cli/azure/azure-cli-configuration",
    ),
    known(
        Config,
        "gcloud",
        "Google Cloud CLI",
        "https://cloud.google.com/sdk/docs/configurations",
    ),
    known(
        Home,
        ".oci",
        "Oracle Cloud CLI",
        "https://docs.oracle.com/en-us/iaas/Content/API/Concepts/sdkconfig.htm",
    ),
    known(
        Config,
        "doctl",
        "DigitalOcean doctl",
        "https://docs.digitalocean.com/reference/doctl/how-to/install/",
    ),
    known(
        Config,
        "hcloud",
        "Hetzner Cloud CLI",
        "https://github.com/hetznercloud/cli/blob/main/docs/tutorials/setup-hcloud-cli.md",
    ),
    known(
        Home,
        ".aliyun",
        "Alibaba Cloud CLI",
        "https://www.alibabacloud.com/help/en/cli/configure-credentials",
    ),
    known(
        Home,
        ".bluemix",
        "IBM Cloud CLI",
        "https://cloud.ibm.com/docs/cli?topic=cli-ibmcloud_env_var",
    ),
    known(
        Config,
        "linode-cli",
        "Linode CLI",
        "https://techdocs.akamai.com/cloud-computing/docs/install-and-configure-the-cli",
    ),
    known(
        Config,
        "scw",
        "Scaleway CLI",
        "https://www.scaleway.com/en/docs/scaleway-cli/reference-content/scaleway-configuration-file/",
    ),
    known(
        Config,
        "openstack",
        "OpenStack client (clouds.yaml)",
        "https://docs.openstack.org/python-openstackclient/latest/configuration/index.html",
    ),
    known(Home, ".s3cfg", "s3cmd", "https://s3tools.org/kb/item14.htm"),
    known(
        Home,
        ".passwd-s3fs",
        "s3fs",
        "https://github.com/s3fs-fuse/s3fs-fuse#examples",
    ),
    known(
        Config,
        "rclone",
        "rclone",
        "https://rclone.org/docs/#config-config-file",
    ),
    known(
        Home,
        ".boto",
        "boto, gsutil",
        "https://cloud.google.com/storage/docs/boto-gsutil",
    ),
    known(Home, ".fly", "Fly.io flyctl", "https://fly.io/docs/flyctl/"),
    known(
        Data,
        "com.vercel.cli",
        "Vercel CLI",
        "https://vercel.com/docs/cli/global-options#global-config",
    ),
    known(
        Config,
        "netlify",
        "Netlify CLI",
        "https://docs.netlify.com/cli/get-started/",
    ),
    known(
        Config,
        ".wrangler",
        "Cloudflare Wrangler",
        "https://developers.cloudflare.com/workers/wrangler/",
    ),
    known(
        Home,
        ".cloudflared",
        "Cloudflare Tunnel",
        "https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/",
    ),
    known(
        Config,
        "configstore",
        "Firebase CLI and other configstore tools",
        "https://firebase.google.com/docs/cli",
    ),
    known(Home, ".expo", "Expo CLI", "https://docs.expo.dev/more/expo-cli/"),
    known(Config, "stripe", "Stripe CLI", "https://docs.stripe.com/stripe-cli"),
    known(Config, "ngrok", "ngrok agent", "https://ngrok.com/docs/agent/config/"),
    known(
        Home,
        ".minikube",
        "minikube",
        "https://minikube.sigs.k8s.io/docs/handbook/config/",
    ),
    known(
        Home,
        ".kube",
        "kubectl",
        "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/",
    ),
    known(Config, "helm", "Helm", "https://helm.sh/docs/helm/helm_repo_add/"),
    known(
        Home,
        ".terraform.d",
        "Terraform",
        "https://developer.hashicorp.com/terraform/cli/config/config-file#credentials",
    ),
    known(
        Home,
        ".terraformrc",
        "Terraform (CLI config, credentials blocks)",
        "https://developer.hashicorp.com/terraform/cli/config/config-file#credentials",
    ),
    known(
        Home,
        ".msmtprc",
        "msmtp",
        "https://marlam.de/msmtp/msmtp.html#Configuration-files",
    ),
    known(
        Config,
        "fish/fish_variables",
        "fish (universal variables, exported keys among them)",
        "https://fishshell.com/docs/current/cmds/set.html",
    ),
    known(
        Config,
        "sops/age",
        "SOPS (age keys)",
        "https://github.com/getsops/sops#encrypting-using-age",
    ),
    known(
        Data,
        "atuin/key",
        "Atuin (sync encryption key)",
        "https://docs.atuin.sh/configuration/config/#key_path",
    ),
    known(
        Config,
        "io.datasette.llm",
        "LLM (API keys)",
        "https://llm.datasette.io/en/stable/setup.html#saving-and-using-stored-keys",
    ),
    known(
        Home,
        ".vault-token",
        "HashiCorp Vault",
        "https://developer.hashicorp.com/vault/docs/commands/token-helper",
    ),
    known(
        Home,
        ".pulumi",
        "Pulumi",
        "https://www.pulumi.com/docs/iac/cli/environment-variables/",
    ),
    known(
        Home,
        ".databrickscfg",
        "Databricks CLI",
        "https://docs.databricks.com/en/dev-tools/auth/config-profiles.html",
    ),
    known(
        Home,
        ".snowflake",
        "Snowflake CLI",
        "https://docs.snowflake.com/en/developer-guide/snowflake-cli/connecting/configure-connections",
    ),
    known(
        Home,
        ".dbt",
        "dbt (profiles.yml)",
        "https://docs.getdbt.com/docs/core/connect-data-platform/profiles.yml",
    ),
    // AI agents and their CLIs, model hubs.
    known(
        Home,
        ".claude",
        "Claude Code",
        "https://docs.anthropic.com/en/docs/claude-code/settings",
    ),
    known(
        Home,
        ".claude.json",
        "Claude Code",
        "https://docs.anthropic.com/en/docs/claude-code/settings",
    ),
    known(
        Home,
        ".codex",
        "OpenAI Codex CLI",
        "https://github.com/openai/codex/blob/main/docs/config.md",
    ),
    known(
        Home,
        ".gemini",
        "Gemini CLI",
        "https://github.com/google-gemini/gemini-cli/blob/main/docs/get-started/authentication.md",
    ),
    known(
        Config,
        "github-copilot",
        "GitHub Copilot",
        "https://github.com/github/copilot.vim",
    ),
    known(Home, ".continue", "Continue", "https://docs.continue.dev/reference"),
    known(
        Home,
        ".aider.conf.yml",
        "aider",
        "https://aider.chat/docs/config/aider_conf.html",
    ),
    known(
        Cache,
        "huggingface/token",
        "Hugging Face Hub",
        "https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables#hfhome",
    ),
    known(
        Cache,
        "huggingface/stored_tokens",
        "Hugging Face Hub",
        "https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables#hfhome",
    ),
    known(
        Home,
        ".huggingface",
        "Hugging Face Hub (older releases)",
        "https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables#hftoken",
    ),
    known(
        Home,
        ".kaggle",
        "Kaggle API",
        "https://www.kaggle.com/docs/api#authentication",
    ),
    known(Home, ".wakatime.cfg", "WakaTime", "https://wakatime.com/faq#api-key"),
    known(
        Home,
        ".sentryclirc",
        "Sentry CLI",
        "https://docs.sentry.io/cli/configuration/",
    ),
    // Package and container registries.
    known(
        Home,
        ".npmrc",
        "npm",
        "https://docs.npmjs.com/cli/configuring-npm/npmrc",
    ),
    known(
        Home,
        ".yarnrc.yml",
        "Yarn",
        "https://yarnpkg.com/configuration/yarnrc#npmAuthToken",
    ),
    known(
        Home,
        ".pypirc",
        "PyPI upload tools",
        "https://packaging.python.org/en/latest/specifications/pypirc/",
    ),
    known(
        Home,
        ".bundle/config",
        "Bundler (credentials for gem sources)",
        "https://bundler.io/man/bundle-config.1.html",
    ),
    known(
        Home,
        ".gitcookies",
        "git over HTTP to Gerrit / googlesource",
        "https://gerrit-review.googlesource.com/Documentation/user-upload.html",
    ),
    known(
        Config,
        "pypoetry/auth.toml",
        "Poetry",
        "https://python-poetry.org/docs/repositories/#configuring-credentials",
    ),
    known(
        Data,
        "uv/credentials",
        "uv",
        "https://docs.astral.sh/uv/concepts/authentication/",
    ),
    known(
        Home,
        ".cargo/credentials",
        "Cargo",
        "https://doc.rust-lang.org/cargo/reference/config.html#credentials",
    ),
    known(
        Home,
        ".cargo/credentials.toml",
        "Cargo",
        "https://doc.rust-lang.org/cargo/reference/config.html#credentials",
    ),
    known(
        Home,
        ".gem/credentials",
        "RubyGems",
        "https://guides.rubygems.org/publishing/",
    ),
    known(
        Home,
        ".m2/settings.xml",
        "Maven",
        "https://maven.apache.org/settings.html#servers",
    ),
    known(
        Home,
        ".m2/settings-security.xml",
        "Maven",
        "https://maven.apache.org/guides/mini/guide-encryption.html",
    ),
    known(
        Home,
        ".gradle/gradle.properties",
        "Gradle",
        "https://docs.gradle.org/current/userguide/build_environment.html",
    ),
    known(
        Home,
        ".nuget/NuGet/NuGet.Config",
        "NuGet",
        "https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file",
    ),
    known(
        Config,
        "NuGet/NuGet.Config",
        "NuGet",
        "https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file",
    ),
    known(
        Config,
        "composer/auth.json",
        "Composer",
        "https://getcomposer.org/doc/articles/authentication-for-private-packages.md",
    ),
    known(
        Home,
        ".composer/auth.json",
        "Composer",
        "https://getcomposer.org/doc/articles/authentication-for-private-packages.md",
    ),
    known(
        Config,
        "dart/pub-credentials.json",
        "Dart pub",
        "https://dart.dev/tools/pub/cmd/pub-token",
    ),
    known(
        Home,
        ".docker",
        "Docker",
        "https://docs.docker.com/reference/cli/docker/login/",
    ),
    known(
        Config,
        "containers/auth.json",
        "Podman, Buildah, Skopeo",
        "https://docs.podman.io/en/latest/markdown/podman-login.1.html",
    ),
    // Git hosting and version control.
    known(
        Config,
        "gh",
        "GitHub CLI",
        "https://cli.github.com/manual/gh_auth_login",
    ),
    known(
        Config,
        "glab-cli",
        "GitLab CLI",
        "https://gitlab.com/gitlab-org/cli/-/blob/main/docs/source/auth/login.md",
    ),
    known(Config, "hub", "hub", "https://hub.github.com/hub.1.html"),
    known(Config, "tea", "Gitea tea", "https://gitea.com/gitea/tea"),
    known(
        Home,
        ".git-credentials",
        "git credential store",
        "https://git-scm.com/docs/git-credential-store",
    ),
    known(
        Config,
        "git/credentials",
        "git credential store",
        "https://git-scm.com/docs/git-credential-store",
    ),
    known(
        Home,
        ".subversion/auth",
        "Subversion",
        "https://svnbook.red-bean.com/en/1.7/svn.serverconfig.netmodel.html#svn.serverconfig.netmodel.credcache",
    ),
    // Databases.
    known(
        Home,
        ".pgpass",
        "PostgreSQL",
        "https://www.postgresql.org/docs/current/libpq-pgpass.html",
    ),
    known(
        Home,
        ".my.cnf",
        "MySQL",
        "https://dev.mysql.com/doc/refman/8.0/en/option-files.html",
    ),
    known(
        Home,
        ".mylogin.cnf",
        "MySQL login paths",
        "https://dev.mysql.com/doc/refman/8.0/en/mysql-config-editor.html",
    ),
    // Password managers and keyrings.
    known(Home, ".password-store", "pass", "https://www.passwordstore.org/"),
    known(
        Data,
        "keyrings",
        "GNOME Keyring",
        "https://wiki.gnome.org/Projects/GnomeKeyring",
    ),
    known(
        Config,
        "op",
        "1Password CLI",
        "https://developer.1password.com/docs/cli/config-directories/",
    ),
    known(
        Config,
        "Bitwarden CLI",
        "Bitwarden CLI",
        "https://bitwarden.com/help/data-storage/",
    ),
    // Browsers: cookies and saved logins.
    known(
        Home,
        ".mozilla",
        "Firefox",
        "https://support.mozilla.org/en-US/kb/profiles-where-firefox-stores-user-data",
    ),
    known(
        Config,
        "google-chrome",
        "Chrome",
        "https://chromium.googlesource.com/chromium/src/+/main/docs/user_data_dir.md",
    ),
    known(
        Config,
        "chromium",
        "Chromium",
        "https://chromium.googlesource.com/chromium/src/+/main/docs/user_data_dir.md",
    ),
    known(
        Config,
        "BraveSoftware",
        "Brave",
        "https://chromium.googlesource.com/chromium/src/+/main/docs/user_data_dir.md",
    ),
    // Shell and REPL histories: commands typed with secrets in them.
    known(
        Home,
        ".bash_history",
        "bash",
        "https://www.gnu.org/software/bash/manual/html_node/Bash-History-Facilities.html",
    ),
    known(
        Home,
        ".zsh_history",
        "zsh",
        "https://zsh.sourceforge.io/Doc/Release/Parameters.html#index-HISTFILE",
    ),
    known(
        Data,
        "fish/fish_history",
        "fish",
        "https://fishshell.com/docs/current/interactive.html#command-line-editor",
    ),
    known(
        Home,
        ".python_history",
        "Python REPL",
        "https://docs.python.org/3/library/site.html#rlcompleter-config",
    ),
    known(
        Home,
        ".psql_history",
        "psql",
        "https://www.postgresql.org/docs/current/app-psql.html",
    ),
    known(
        Home,
        ".mysql_history",
        "mysql",
        "https://dev.mysql.com/doc/refman/8.0/en/mysql-logging.html",
    ),
    known(
        Home,
        ".node_repl_history",
        "Node.js REPL",
        "https://nodejs.org/api/repl.html#persistent-history",
    ),
];

/// The [`KNOWN`] stores as the table `docs/credentials.md` shows (a test
/// keeps the two the same).
pub fn table() -> String {
    let mut text = String::from("| path | tool | documented at |\n|---|---|---|\n");
    for store in KNOWN {
        let base = match store.base {
            Home => "~",
            Config => "$XDG_CONFIG_HOME (~/.config)",
            Data => "$XDG_DATA_HOME (~/.local/share)",
            Cache => "$XDG_CACHE_HOME (~/.cache)",
        };
        text.push_str(&format!(
            "| `{base}/{}` | {} | <{}> |\n",
            store.path, store.tool, store.docs
        ));
    }
    text
}

/// A credential store a tool keeps where an environment variable says,
/// wherever that is (outside the home directory too).
#[derive(Debug)]
pub struct EnvStore {
    /// The variable (a path; `KUBECONFIG` a list of them).
    pub var: &'static str,
    /// The files in that directory that are the store, or none for the
    /// path itself.
    pub files: &'static [&'static str],
    /// The tool that reads it.
    pub tool: &'static str,
    /// Where its documentation says so.
    pub docs: &'static str,
}

const fn env_store(
    var: &'static str,
    files: &'static [&'static str],
    tool: &'static str,
    docs: &'static str,
) -> EnvStore {
    EnvStore { var, files, tool, docs }
}

/// The stores the host's environment names.
pub const ENV_STORES: &[EnvStore] = &[
    env_store(
        "DOCKER_CONFIG",
        &[],
        "Docker",
        "https://docs.docker.com/reference/cli/docker/#environment-variables",
    ),
    env_store(
        "GNUPGHOME",
        &[],
        "GnuPG",
        "https://www.gnupg.org/documentation/manuals/gnupg/GPG-Configuration.html",
    ),
    env_store(
        "AWS_SHARED_CREDENTIALS_FILE",
        &[],
        "AWS CLI",
        "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-envvars.html",
    ),
    env_store(
        "AWS_CONFIG_FILE",
        &[],
        "AWS CLI",
        "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-envvars.html",
    ),
    env_store(
        "KUBECONFIG",
        &[],
        "kubectl",
        "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/",
    ),
    env_store(
        "GOOGLE_APPLICATION_CREDENTIALS",
        &[],
        "Google Cloud client libraries",
        "https://cloud.google.com/docs/authentication/application-default-credentials",
    ),
    env_store(
        "CLOUDSDK_CONFIG",
        &[],
        "gcloud",
        "https://cloud.google.com/sdk/docs/configurations",
    ),
    env_store(
        "AZURE_CONFIG_DIR",
        &[],
        "Azure CLI",
        "https://learn.microsoft.com/en-us/cli/azure/azure-cli-configuration",
    ),
    env_store(
        "GH_CONFIG_DIR",
        &[],
        "GitHub CLI",
        "https://cli.github.com/manual/gh_help_environment",
    ),
    env_store(
        "NPM_CONFIG_USERCONFIG",
        &[],
        "npm",
        "https://docs.npmjs.com/cli/v10/using-npm/config#userconfig",
    ),
    env_store(
        "NETRC",
        &[],
        "curl, Python's netrc, Go",
        "https://everything.curl.dev/usingcurl/netrc.html",
    ),
    env_store(
        "PGPASSFILE",
        &[],
        "PostgreSQL (libpq)",
        "https://www.postgresql.org/docs/current/libpq-envars.html",
    ),
    env_store(
        "PASSWORD_STORE_DIR",
        &[],
        "pass",
        "https://git.zx2c4.com/password-store/about/",
    ),
    env_store(
        "CARGO_HOME",
        &["credentials.toml", "credentials"],
        "Cargo",
        "https://doc.rust-lang.org/cargo/reference/config.html#credentials",
    ),
    env_store(
        "HF_HOME",
        &["token", "stored_tokens"],
        "Hugging Face Hub",
        "https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables",
    ),
    env_store(
        "HF_TOKEN_PATH",
        &[],
        "Hugging Face Hub",
        "https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables",
    ),
    env_store(
        "TF_CLI_CONFIG_FILE",
        &[],
        "Terraform",
        "https://developer.hashicorp.com/terraform/cli/config/config-file",
    ),
    env_store("RCLONE_CONFIG", &[], "rclone", "https://rclone.org/docs/#config-string"),
    env_store(
        "ANSIBLE_VAULT_PASSWORD_FILE",
        &[],
        "Ansible",
        "https://docs.ansible.com/ansible/latest/reference_appendices/config.html#default-vault-password-file",
    ),
    env_store(
        "VAULT_CONFIG_PATH",
        &[],
        "HashiCorp Vault",
        "https://developer.hashicorp.com/vault/docs/commands#vault_config_path",
    ),
];

/// The [`ENV_STORES`] that `var` names and that exist: absolute paths only,
/// never `/`, never one holding any of `keep` (the project, the home
/// directory: hiding those would hide what commands work on).
pub fn env_stores(var: impl Fn(&str) -> Option<std::ffi::OsString>, keep: &[&Path]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for store in ENV_STORES {
        let Some(value) = var(store.var).filter(|v| !v.is_empty()) else {
            continue;
        };
        for path in std::env::split_paths(&value).filter(|p| p.is_absolute()) {
            let paths: Vec<PathBuf> = if store.files.is_empty() {
                vec![path]
            } else {
                store.files.iter().map(|f| path.join(f)).collect()
            };
            found.extend(paths.into_iter().filter(|p| {
                p.parent().is_some() && !keep.iter().any(|k| k.starts_with(p)) && std::fs::symlink_metadata(p).is_ok()
            }));
        }
    }
    found
}

/// [`ENV_STORES`] as the Markdown table docs/credentials.md holds.
pub fn env_table() -> String {
    let mut text = String::from("| variable | what of it | tool | documented at |\n|---|---|---|---|\n");
    for store in ENV_STORES {
        let what = if store.files.is_empty() {
            "the path".to_string()
        } else {
            store
                .files
                .iter()
                .map(|f| format!("`{f}` in it"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        text.push_str(&format!(
            "| `{}` | {what} | {} | <{}> |\n",
            store.var, store.tool, store.docs
        ));
    }
    text
}

/// Directories searched at most this deep below the home directory.
pub const MAX_DEPTH: usize = 6;

/// The parts of an install tree ([`Scope::install_trees`]) the search does
/// not enter: large, and what a runtime runs rather than configuration
/// (npm's global `etc/npmrc` five levels down under nvm, a virtualenv's
/// `pip.conf`, are outside them).
const INSTALL_PARTS: &[&str] = &[
    "bin",
    "sbin",
    "lib",
    "lib64",
    "libexec",
    "include",
    "share",
    "man",
    "doc",
    "docs",
    "src",
    "pkg",
    "registry",
    "git",
    "toolchains",
    "downloads",
    "cache",
    "caches",
    "test",
    "tests",
];

/// Directory entries one search looks at, at most.
pub const MAX_ENTRIES: usize = 100_000;

/// The time one search may take.
pub const TIME_BUDGET: Duration = Duration::from_millis(250);

/// Trees under the home directory the search does not enter: packages,
/// toolchains and caches of downloads, large and without secrets (a store
/// in one would be found by [`KNOWN`], not by its name).
const BULKY: &[&str] = &[
    ".rustup",
    ".cargo/registry",
    ".cargo/git",
    ".npm/_cacache",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
    ".cache/pip",
    ".cache/uv",
    ".cache/go-build",
    ".cache/huggingface/hub",
    ".cache/mozilla",
    ".cache/google-chrome",
    ".cache/chromium",
    ".local/share/Trash",
    ".vscode/extensions",
    ".vscode-server",
];

/// Directory names the search never enters, wherever they are.
const NEVER_ENTERED: &[&str] = &["node_modules", ".git", "__pycache__", "site-packages"];

/// Whether a file or directory name looks like it holds a credential
/// (ASCII case ignored): `token` as a word (`access_token`, `.vault-token`,
/// `tokens.json`, not `tokenizer.json`), `credential`, `secret`, `oauth`,
/// `password`, `passwd`, `apikey`/`api_key`/`api-key`, the key and keystore
/// suffixes (`.pem`, `.key`, `.p12`, `.pfx`, `.jks`, `.keystore`, `.kdbx`,
/// `.gpg`, `.ppk`, `.ovpn`), SSH keys (`id_*`), and `.netrc`, `.pgpass`,
/// `auth.json`, browser cookie and login stores.
pub fn looks_secret(name: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    let has = |needle: &[u8]| memchr::memmem::find(&name, needle).is_some();
    let token_word = memchr::memmem::find_iter(&name, b"token").any(|at| {
        let rest = &name[at + 5..];
        match rest {
            [] => true,
            [b's', rest @ ..] => rest.first().is_none_or(|b| !b.is_ascii_alphabetic()),
            [b, ..] => !b.is_ascii_alphabetic(),
        }
    });
    const SUFFIXES: &[&[u8]] = &[
        b".pem",
        b".key",
        b".p12",
        b".pfx",
        b".jks",
        b".keystore",
        b".kdbx",
        b".gpg",
        b".ppk",
        b".ovpn",
    ];
    const EXACT: &[&[u8]] = &[
        b".netrc",
        b".pgpass",
        b"auth.json",
        b"cookies",
        b"cookies.sqlite",
        b"login data",
        b"logins.json",
        b"key4.db",
        b"key3.db",
    ];
    token_word
        || [
            "credential",
            "secret",
            "oauth",
            "password",
            "passwd",
            "apikey",
            "api_key",
            "api-key",
        ]
        .iter()
        .any(|w| has(w.as_bytes()))
        || SUFFIXES.iter().any(|s| name.ends_with(s))
        || name.starts_with(b"id_")
        || EXACT.contains(&name.as_slice())
        || is_key_file(&name)
}

/// Configuration files that builds read but that may also hold a login
/// (`~/.cargo/config.toml`'s `[registry] token`, a token in a URL of
/// `~/.gitconfig`, Gradle's
/// `gradle.properties`, Maven's `settings.xml`, pip's `index-url` with a
/// password, npm's global `npmrc`): hidden when they do
/// ([`carries_secret`]), shown when they do not, so builds keep them.
const MAY_HOLD_SECRETS: &[&[u8]] = &[
    b".gitconfig",
    b"config.toml",
    b"config",
    b"npmrc",
    b".npmrc",
    b".yarnrc",
    b".yarnrc.yml",
    b"gradle.properties",
    b"settings.xml",
    b"settings-security.xml",
    b"pip.conf",
    b"pip.ini",
    b".condarc",
    b".gemrc",
    b"gemrc",
    b"condarc",
    b".bunfig.toml",
    b"bunfig.toml",
];

/// Where npm keeps its built-in `npmrc` below a prefix's `lib` (an install
/// part the search does not enter): npm reads it on every run.
const NPM_BUILTIN_DIR: &str = "node_modules/npm";

/// Directories whose every file is a configuration read like those of
/// [`MAY_HOLD_SECRETS`]: conda's `condarc.d`, Gradle's `init.d` scripts.
const CONFIG_DIRS: &[&[u8]] = &[b"condarc.d", b"init.d"];

/// Whether the file `name` in the directory named `parent` is a
/// configuration to read for logins ([`carries_secret`]).
fn may_hold_secrets(name: &[u8], parent: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    MAY_HOLD_SECRETS.contains(&name.as_slice())
        || name.ends_with(b".gradle")
        || name.ends_with(b".gradle.kts")
        || CONFIG_DIRS.contains(&parent.to_ascii_lowercase().as_slice())
}

/// Bytes of one such file read at most: one longer is hidden unread.
const MAX_CONFIG_BYTES: usize = 256 << 10;

/// Whether a line of the file `name` in `dir` (one [`may_hold_secrets`]
/// picks) names a login (`token`, `password`, `secret`, `_auth`,
/// `apikey`, `authorization`, `bearer`), a key ends like a password's
/// (`smtpPass`), or a login stands before an `@` (`https://user:pw@`,
/// `user:pw@proxy`, `https://<token>@`). Read without
/// blocking and within [`MAX_CONFIG_BYTES`]; one past that is taken as
/// holding one.
fn carries_secret(dir: &impl std::os::fd::AsFd, name: &std::ffi::CStr) -> bool {
    // Links followed (a dotfiles repository's), but only to a file.
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let Ok(fd) = rustix::fs::openat(dir, name, flags, Mode::empty()) else {
        return false;
    };
    if !rustix::fs::fstat(&fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile) {
        return false;
    }
    let mut text = Vec::new();
    use std::io::Read;
    if std::fs::File::from(fd)
        .take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_end(&mut text)
        .is_err()
    {
        return false;
    }
    if text.len() > MAX_CONFIG_BYTES {
        return true;
    }
    text.make_ascii_lowercase();
    let words: &[&[u8]] = &[
        b"token",
        b"password",
        b"passwd",
        b"secret",
        b"_auth",
        b"apikey",
        b"api_key",
        b"authorization",
        b"bearer",
    ];
    text.split(|&b| b == b'\n').any(|line| {
        let line = line.trim_ascii();
        // (`//host/:_authToken` is npm's syntax, not a comment.)
        let comment = line.starts_with(b"#") || line.starts_with(b";");
        !comment
            && (words.iter().any(|w| memchr::memmem::find(line, w).is_some())
                || key_names_a_password(line)
                || userinfo_with_password(line)
                || token_in_a_url_path(line)
                || known_token(line))
    })
}

/// Whether the key of a `key = value` (or `key: value`) line names a
/// password by its end: `smtpPass`, `db_pwd`, `proxy-pw`.
fn key_names_a_password(line: &[u8]) -> bool {
    let Some(end) = line.iter().position(|&b| b == b'=' || b == b':') else {
        return false;
    };
    let key = line[..end].trim_ascii().trim_ascii_end();
    let key = key.strip_suffix(b"\"").unwrap_or(key);
    [&b"pass"[..], b"pwd", b"pw"].iter().any(|end| key.ends_with(end))
}

/// The prefixes of tokens their issuers mark (lower case): GitHub's,
/// GitLab's, Slack's, npm's, PyPI's, Hugging Face's, OpenAI-style keys,
/// AWS access key ids.
const TOKEN_PREFIXES: &[&[u8]] = &[
    b"ghp_",
    b"gho_",
    b"ghu_",
    b"ghs_",
    b"ghr_",
    b"github_pat_",
    b"glpat-",
    b"xoxb-",
    b"xoxp-",
    b"npm_",
    b"pypi-",
    b"hf_",
    b"sk-",
    b"akia",
];

/// Whether `line` (lower case) holds a token by its issuer's prefix
/// (`gpr.key=ghp_…` in a `gradle.properties`): the prefix at the start of
/// a word, then 16 bytes or more of letters, digits, `-` and `_`.
fn known_token(line: &[u8]) -> bool {
    TOKEN_PREFIXES.iter().any(|prefix| {
        memchr::memmem::find_iter(line, prefix).any(|at| {
            let starts_word = at == 0 || !line[at - 1].is_ascii_alphanumeric();
            let rest = &line[at + prefix.len()..];
            let body = rest
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
                .count();
            starts_word && body >= 16
        })
    })
}

/// Whether a URL in `line` carries a token in its path
/// (`https://conda.anaconda.org/t/<token>/acme`): a segment of 24 bytes
/// or more of letters, digits, `-` and `_`, with letters and digits both.
fn token_in_a_url_path(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"://").any(|at| {
        let rest = &line[at + 3..];
        let end = rest
            .iter()
            .position(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'<' | b'?' | b'#'))
            .unwrap_or(rest.len());
        rest[..end].split(|&b| b == b'/').skip(1).any(|segment| {
            segment.len() >= 24
                && segment
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
                && segment.iter().any(u8::is_ascii_digit)
                && segment.iter().any(u8::is_ascii_alphabetic)
        })
    })
}

/// Whether `line` holds a login before an `@`: `user:password@host`, with
/// a scheme or without (libcurl's proxy form), or a token alone as a URL's
/// user (`https://<token>@github.com`: 16 bytes or more, and not `git`).
fn userinfo_with_password(line: &[u8]) -> bool {
    memchr::memchr_iter(b'@', line).any(|at| {
        let before = &line[..at];
        let start = before
            .iter()
            .rposition(|b| {
                b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'=' | b',' | b'[' | b'(' | b'<' | b'>')
            })
            .map_or(0, |i| i + 1);
        let segment = &before[start..];
        match memchr::memmem::rfind(segment, b"://") {
            Some(scheme) => {
                let user = &segment[scheme + 3..];
                user.contains(&b':') || (user.len() >= 16 && !user.contains(&b'/'))
            }
            None => segment.contains(&b':') && !segment.contains(&b'/'),
        }
    })
}

/// `key` or `keys`, bare or as data (`keys.txt`, `key.json`): where age,
/// Atuin and LLM keep theirs; not a document about keys (`keys.md`).
fn is_key_file(name: &[u8]) -> bool {
    let (stem, extension) = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 => (&name[..dot], Some(&name[dot + 1..])),
        _ => (name, None),
    };
    (stem == b"key" || stem == b"keys")
        && extension.is_none_or(|e| [&b"txt"[..], b"json", b"yaml", b"yml", b"toml", b"bin"].contains(&e))
}

/// `$XDG_*` or its default under `home`.
fn base_dir(base: Base, home: &Path) -> PathBuf {
    let xdg = |var: &str, default: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(default))
    };
    match base {
        Home => home.to_path_buf(),
        Config => xdg("XDG_CONFIG_HOME", ".config"),
        Data => xdg("XDG_DATA_HOME", ".local/share"),
        Cache => xdg("XDG_CACHE_HOME", ".cache"),
    }
}

/// Where one search looks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// The home directory.
    pub home: PathBuf,
    /// Whether the whole home directory is searched (`home: visible`):
    /// its dot-directories, the XDG directories and the app homes of snaps
    /// and Flatpaks; else only [`Scope::shown`].
    pub whole: bool,
    /// Directories searched whole: what `read:` shows.
    pub shown: Vec<PathBuf>,
    /// Directories searched as install trees: the toolchains' and the real
    /// cache, large (a JDK, a Go module cache), searched to [`MAX_DEPTH`]
    /// but not into their [`INSTALL_PARTS`]; their logins sit in their
    /// configuration (`~/.cargo/credentials.toml`,
    /// `~/.nvm/versions/node/<v>/etc/npmrc`, `~/.cache/huggingface/token`).
    pub install_trees: Vec<PathBuf>,
    /// Directories never searched: what sandboxed commands may write (the
    /// root, `write:` paths). Their files are the commands' own, and would
    /// spend the search's bound before it reached the user's.
    pub skip: Vec<PathBuf>,
}

/// What one search found, and how to tell whether it still holds.
#[derive(Debug, Default)]
pub struct Discovered {
    scope: Scope,
    /// What to hide, sorted: the known stores that exist and every name
    /// that looks secret.
    found: Vec<PathBuf>,
    /// Every directory the search read, with its change time then.
    read: Vec<(PathBuf, i128)>,
    /// Whether the search stopped at a bound before it read everything.
    pub cut_short: bool,
}

impl Discovered {
    /// What to hide in `scope` now: the last search's answer while every
    /// directory it read is unmoved, else a new search's.
    pub fn refresh(&mut self, scope: &Scope) -> &[PathBuf] {
        let unmoved = !self.read.is_empty()
            && self.scope == *scope
            && self.read.iter().all(|(dir, ctime)| ctime_of(dir) == Some(*ctime));
        if !unmoved {
            *self = search(scope);
        }
        &self.found
    }
}

/// A directory's change time (ns), links followed (the search enters a
/// linked directory, and a link retargeted changes its parent's time).
fn ctime_of(path: &Path) -> Option<i128> {
    let st = rustix::fs::statat(rustix::fs::CWD, path, AtFlags::empty()).ok()?;
    Some(i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec))
}

/// The app homes under `home` that snaps (`~/snap/<app>/<revision>`,
/// `~/snap/<app>/common`) and Flatpaks (`~/.var/app/<id>`) keep their own
/// dot-directories and XDG directories in: searched like a home of their
/// own, whole.
fn app_homes(home: &Path) -> Vec<PathBuf> {
    let children = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .take(256)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut homes: Vec<PathBuf> = children(&home.join("snap"))
        .iter()
        .flat_map(|app| children(app))
        .collect();
    homes.extend(children(&home.join(".var/app")));
    homes
}

/// Searches `scope`: the [`KNOWN`] stores that exist in it, then breadth
/// first (links to directories followed, each directory once) for names
/// that [`looks_secret`], within the bounds.
pub fn search(scope: &Scope) -> Discovered {
    let started = Instant::now();
    let home = scope.home.as_path();
    // The shown directories also as they really are: one may be a link
    // (`~/go` to anywhere), and a store may be a link into one.
    let real_scope: Vec<PathBuf> = scope
        .shown
        .iter()
        .chain(&scope.install_trees)
        .filter_map(|s| std::fs::canonicalize(s).ok())
        .collect();
    let in_scope = |p: &Path| {
        scope.whole
            || scope.shown.iter().chain(&scope.install_trees).any(|s| p.starts_with(s))
            || real_scope.iter().any(|s| p.starts_with(s))
    };
    // A known store where its tool looks, and where it really is (a
    // dotfiles repository's `kube/config` that `~/.kube` links to, shown by
    // `read:`).
    let mut found: Vec<PathBuf> = Vec::new();
    for store in KNOWN {
        let path = base_dir(store.base, home).join(store.path);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        if let Ok(real) = std::fs::canonicalize(&path)
            && real != path
            && in_scope(&real)
        {
            found.push(real);
        }
        if in_scope(&path) {
            found.push(path);
        }
    }
    // A shown file (`~/.gitconfig`) is not listed in a directory searched:
    // one that holds a login is hidden all the same.
    for file in scope.shown.iter().chain(&scope.install_trees) {
        let (Some(parent), Some(name)) = (file.parent(), file.file_name()) else {
            continue;
        };
        let flags = crate::platform::O_PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let (Ok(dir), Ok(name)) = (
            rustix::fs::open(parent, flags, Mode::empty()),
            std::ffi::CString::new(name.as_bytes()),
        ) else {
            continue;
        };
        let is_file = rustix::fs::statat(&dir, &name, AtFlags::empty())
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile);
        let parent_name = parent.file_name().map_or(&b""[..], OsStr::as_bytes);
        if is_file && may_hold_secrets(name.as_bytes(), parent_name) && carries_secret(&dir, &name) {
            found.push(file.clone());
        }
    }
    let bulky: Vec<PathBuf> = BULKY.iter().map(|b| home.join(b)).collect();
    let mut read = Vec::new();
    // (a directory, its depth, whether it is in an install tree)
    let mut queue: VecDeque<(PathBuf, usize, bool)> = VecDeque::new();
    if scope.whole {
        queue.push_back((home.to_path_buf(), 0, false));
        for base in [Config, Data, Cache] {
            let dir = base_dir(base, home);
            if !dir.starts_with(home) {
                queue.push_back((dir, 1, false));
            }
        }
        queue.extend(app_homes(home).into_iter().map(|d| (d, 1, false)));
    }
    queue.extend(scope.shown.iter().map(|d| (d.clone(), 1, false)));
    queue.extend(scope.install_trees.iter().map(|d| (d.clone(), 1, true)));
    let mut visited = std::collections::HashSet::new();
    let (mut entries, mut cut_short) = (0usize, false);
    while let Some((dir, depth, install)) = queue.pop_front() {
        if entries >= MAX_ENTRIES || started.elapsed() > TIME_BUDGET {
            cut_short = true;
            break;
        }
        if scope.skip.iter().any(|s| dir.starts_with(s)) {
            continue;
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let Ok(fd) = rustix::fs::open(&dir, flags, Mode::empty()) else {
            continue;
        };
        let Ok(st) = rustix::fs::fstat(&fd) else {
            continue;
        };
        if !visited.insert((st.st_dev, st.st_ino)) {
            continue;
        }
        read.push((
            dir.clone(),
            i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
        ));
        let dir_name = dir.file_name().map_or(&b""[..], OsStr::as_bytes).to_vec();
        let mut buffer = Vec::with_capacity(32 << 10);
        let mut listing = crate::platform::listing(&fd, &mut buffer);
        while let Some(Ok(entry)) = listing.next() {
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            entries += 1;
            let path = dir.join(OsStr::from_bytes(name));
            if looks_secret(name) {
                found.push(path);
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode)),
                known => known,
            };
            if matches!(kind, FileType::RegularFile | FileType::Symlink)
                && may_hold_secrets(name, &dir_name)
                && carries_secret(&fd, entry.file_name())
            {
                found.push(path);
                continue;
            }
            // Below the home directory itself only its dot-directories
            // (and `snap`, whose app homes hold theirs).
            // A linked directory (a stow-managed `~/.config`) is searched
            // where it is, so its finds are hidden there and the skipped
            // directories are known by their own paths.
            let path = match kind {
                FileType::Symlink => match std::fs::canonicalize(&path) {
                    Ok(target) if target.is_dir() => target,
                    _ => continue,
                },
                _ => path,
            };
            let is_dir = matches!(kind, FileType::Directory | FileType::Symlink);
            let entered = is_dir
                && depth < MAX_DEPTH
                && (depth > 0 || name.starts_with(b".") || name == b"snap")
                && !NEVER_ENTERED.iter().any(|n| n.as_bytes() == name)
                && !(install && INSTALL_PARTS.iter().any(|n| n.as_bytes() == name))
                && !bulky.contains(&path);
            if entered {
                queue.push_back((path, depth + 1, install));
            } else if install && is_dir && name == b"lib" {
                // npm's own configuration, inside the part not entered.
                if let Ok(npm) = rustix::fs::open(path.join(NPM_BUILTIN_DIR), flags, Mode::empty())
                    && carries_secret(&npm, c"npmrc")
                {
                    found.push(path.join(NPM_BUILTIN_DIR).join("npmrc"));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    // A path under one already hidden needs no mount of its own.
    let mut hidden: Vec<PathBuf> = Vec::with_capacity(found.len());
    for path in found {
        if !hidden.last().is_some_and(|h| path.starts_with(h)) {
            hidden.push(path);
        }
    }
    Discovered {
        scope: scope.clone(),
        found: hidden,
        read,
        cut_short,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build's configuration file is hidden when a line of it names a
    /// login or a URL carries a password, and only then; other names are
    /// not read; a FIFO does not block.
    #[test]
    fn build_configurations_are_hidden_when_they_hold_a_login() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (name, text, holds) in [
            ("config.toml", "[registry]\ntoken = \"cio_abc\"\n", true),
            ("config.toml", "[build]\njobs = 4\n# a token would go here\n", false),
            ("npmrc", "//registry.npmjs.org/:_authToken=npm_abc\n", true),
            (
                "pip.conf",
                "[global]\nindex-url = https://me:pw@pypi.example/simple\n",
                true,
            ),
            ("pip.conf", "[global]\nindex-url = https://pypi.example/simple\n", false),
            (
                ".gitconfig",
                "[url \"https://x:ghp_abc@github.com/\"]\n\tinsteadOf = https://github.com/\n",
                true,
            ),
            (".gitconfig", "[user]\n\tname = Me\n\temail = me@example.com\n", false),
            ("settings.xml", "<server><password>pw</password></server>\n", true),
            // What a review read past the first rules.
            (
                ".gitconfig",
                "[http]\n\textraHeader = Authorization: Bearer ghp_abc\n",
                true,
            ),
            (
                "config",
                "[url \"https://ghp_0123456789abcdef0123@github.com/\"]\n\tinsteadOf = x\n",
                true,
            ),
            ("config", "[sendemail]\n\tsmtpPass = hunter2\n", true),
            ("config.toml", "[http]\nproxy = \"user:pw@proxy:3128\"\n", true),
            (
                "config.toml",
                "[registries.a]\nindex = \"sparse+https://0123456789abcdef01@host/\"\n",
                true,
            ),
            (
                "pip.conf",
                "[global]\nindex-url = https://0123456789abcdef0123@pypi.fury.io/acme/\n",
                true,
            ),
            // A git remote's user, an email, ssh: none is a login.
            (
                ".gitconfig",
                "[url \"ssh://git@github.com/\"]\n\tinsteadOf = git@github.com:\n[user]\n\temail = me@example.com\n",
                false,
            ),
            ("notes.txt", "token = abc\n", false),
            ("gemrc", ":sources:\n- https://ci-bot:pw@gems.example/\n", true),
            (
                ".condarc",
                "channels:\n  - https://conda.anaconda.org/t/ab12-cd34ef56-7890-abcd-ef12/acme\n",
                true,
            ),
            ("corp.gradle", "credentials { password \"pw\" }\n", true),
            (
                "config",
                "url = https://github.com/rust-lang/cargo/blob/master/src/doc/README.md\n",
                false,
            ),
            (
                "gradle.properties",
                "gpr.user=octocat\ngpr.key=ghp_0123456789abcdefABCDEF0123\n",
                true,
            ),
            (
                "gradle.properties",
                "org.gradle.jvmargs=-Xmx2g\nkotlin.code.style=official\n",
                false,
            ),
        ] {
            std::fs::write(d.join(name), text).unwrap();
            let dir_fd = rustix::fs::open(d, crate::platform::O_PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
            let c_name = std::ffi::CString::new(name).unwrap();
            let hidden = may_hold_secrets(name.as_bytes(), b"some-dir") && carries_secret(&dir_fd, &c_name);
            assert_eq!(hidden, holds, "{name}: {text}");
        }
        std::fs::write(d.join("config"), vec![b'x'; MAX_CONFIG_BYTES + 1]).unwrap();
        let dir_fd = rustix::fs::open(d, crate::platform::O_PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        assert!(carries_secret(&dir_fd, c"config"), "too long to read: hidden");
        std::fs::remove_file(d.join("config")).unwrap();
        rustix::fs::mknodat(&dir_fd, "config", FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        assert!(!carries_secret(&dir_fd, c"config"), "a FIFO is not read");
    }

    #[test]
    fn the_list_names_at_least_sixty_stores_each_with_its_documentation() {
        assert!(KNOWN.len() >= 60, "{} stores", KNOWN.len());
        for store in KNOWN {
            assert!(store.docs.starts_with("https://"), "{store:?}");
            assert!(!store.path.starts_with('/') && !store.path.contains(".."), "{store:?}");
        }
    }

    #[test]
    fn stores_the_environment_names_are_found_wherever_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for rel in [
            "docker/config.json",
            "cargo/credentials.toml",
            "kube/a",
            "kube/b",
            "project/x",
        ] {
            std::fs::create_dir_all(d.join(rel).parent().unwrap()).unwrap();
            std::fs::write(d.join(rel), "secret").unwrap();
        }
        let vars = [
            ("DOCKER_CONFIG", d.join("docker").into_os_string()),
            ("CARGO_HOME", d.join("cargo").into_os_string()),
            (
                "KUBECONFIG",
                std::env::join_paths([d.join("kube/a"), d.join("kube/b"), "relative".into()]).unwrap(),
            ),
            // A variable naming the project (or anything holding it) is
            // not a store to hide; nor is `/` or what does not exist.
            ("GNUPGHOME", d.into()),
            ("PASSWORD_STORE_DIR", "/".into()),
            ("NETRC", d.join("missing").into_os_string()),
        ];
        let var = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
        let found = env_stores(var, &[&d.join("project")]);
        assert_eq!(
            found,
            [
                d.join("docker"),
                d.join("kube/a"),
                d.join("kube/b"),
                d.join("cargo/credentials.toml")
            ]
        );
        for store in ENV_STORES {
            assert!(store.docs.starts_with("https://"), "{store:?}");
        }
    }

    #[test]
    fn names_that_hold_secrets_are_known_by_their_look() {
        for name in [
            "token",
            ".vault-token",
            "access_token",
            "tokens.json",
            "hub_token",
            "credentials",
            "client_secret.json",
            "oauth_creds.json",
            "id_ed25519",
            "server.pem",
            "tls.KEY",
            "vault.kdbx",
            ".netrc",
            "auth.json",
            "my-api-key.txt",
            ".passwd-s3fs",
            "Cookies",
            "keys.txt",
            "keys.json",
            "key",
        ] {
            assert!(looks_secret(name.as_bytes()), "{name}");
        }
        for name in [
            "tokenizer.json",
            "tokenizer_config.json",
            "config.yml",
            "settings.json",
            "keys.md",
            "keyboard.json",
            "monkey.txt",
            "README",
        ] {
            assert!(!looks_secret(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn a_search_finds_stores_by_list_and_by_name_and_is_kept_until_something_moves() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path();
        let write = |rel: &str| {
            let path = home.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "secret").unwrap();
        };
        write(".ssh/id_ed25519");
        write(".config/doctl/config.yaml");
        write(".toolx/session/oauth_token");
        write(".cache/huggingface/token");
        write(".cache/huggingface/hub/models--x/tokenizer.json");
        write(".rustup/toolchains/x/secret.pem");
        write("projects/secret.txt");
        write(".config/app/settings.json");
        let mut discovered = Discovered::default();
        let scope = Scope {
            home: home.to_path_buf(),
            whole: true,
            ..Scope::default()
        };
        let rel = |found: &[PathBuf]| -> Vec<String> {
            found
                .iter()
                .map(|p| p.strip_prefix(home).unwrap().display().to_string())
                .collect()
        };
        let found = rel(discovered.refresh(&scope));
        assert_eq!(
            found,
            [
                ".cache/huggingface/token",
                ".config/doctl",
                ".ssh",
                ".toolx/session/oauth_token"
            ],
            "by list and by name; not inside bulky trees, not outside dot-directories"
        );
        let reads = discovered.read.len();
        assert_eq!(rel(discovered.refresh(&scope)), found, "unmoved: the same answer");
        assert_eq!(discovered.read.len(), reads);
        write(".newtool/credentials.json");
        assert!(
            rel(discovered.refresh(&scope)).contains(&".newtool/credentials.json".to_string()),
            "a new store is found by the next start"
        );
    }

    #[test]
    fn a_search_follows_linked_directories_and_app_homes_and_skips_what_commands_write() {
        let home = tempfile::tempdir().unwrap();
        let home = &std::fs::canonicalize(home.path()).unwrap();
        let write = |rel: &str| {
            let path = home.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "secret").unwrap();
        };
        // A stow-style `~/.config`, a snap's and a Flatpak's app homes, deep.
        write("dotfiles/config/mytool/token");
        std::os::unix::fs::symlink(home.join("dotfiles/config"), home.join(".config")).unwrap();
        write("snap/firefox/common/.mozilla/firefox/p.default/logins.json");
        write(".var/app/com.google.Chrome/config/google-chrome/Default/Network/Cookies");
        // A project under the home directory, its files the commands' own.
        write(".config/nvim/project/junk/token");
        let scope = Scope {
            home: home.clone(),
            whole: true,
            shown: Vec::new(),
            install_trees: Vec::new(),
            skip: vec![home.join("dotfiles/config/nvim/project")],
        };
        let found = search(&scope);
        let rel: Vec<String> = found
            .found
            .iter()
            .map(|p| p.strip_prefix(home).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                ".var/app/com.google.Chrome/config/google-chrome/Default/Network/Cookies",
                "dotfiles/config/mytool/token",
                "snap/firefox/common/.mozilla/firefox/p.default/logins.json",
            ]
        );
        // Only what a hidden home shows is searched then.
        let shown = Scope {
            home: home.clone(),
            whole: false,
            shown: vec![home.join("snap")],
            install_trees: Vec::new(),
            skip: Vec::new(),
        };
        assert_eq!(search(&shown).found.len(), 1);
        // An install tree outside the parts a runtime runs: npm's global
        // config five levels down is found, a JDK's library is not entered.
        write(".sdkman/candidates/java/17/lib/security/cacerts.key");
        write(".sdkman/etc/token");
        write(".nvm/versions/node/v20.11.0/lib/node_modules/x/token");
        let npmrc = home.join(".nvm/versions/node/v20.11.0/etc/npmrc");
        std::fs::create_dir_all(npmrc.parent().unwrap()).unwrap();
        std::fs::write(&npmrc, "//registry.npmjs.org/:_authToken=npm_x\n").unwrap();
        let install_trees = Scope {
            home: home.clone(),
            whole: false,
            shown: Vec::new(),
            install_trees: vec![home.join(".sdkman"), home.join(".nvm")],
            skip: Vec::new(),
        };
        let found: Vec<PathBuf> = search(&install_trees).found;
        assert_eq!(
            found,
            [
                home.join(".nvm/versions/node/v20.11.0/etc/npmrc"),
                home.join(".sdkman/etc/token")
            ]
        );
    }
}
