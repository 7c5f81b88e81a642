// Package api provisions gauntlet's HTTP API: API Gateway v2 in front of the
// api function (payload v2), every /v1 route behind a JWT authorizer (an
// external issuer, or a Cognito user pool the construct creates), the OpenAPI
// document and health check open, CORS for the console, default-stage
// throttling and JSON access logs.
//
// The built-in user pool puts each user into a workspace with the custom
// attribute custom:workspace, which only an administrator can set (the app
// client may read it but not write it), and makes platform operators of the
// members of the AdminGroup group. Its ID tokens carry both (the attribute
// and cognito:groups), and their audience is the app client id.
package api

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/gauntlet-bench/gauntlet/pkg/auth/jwtauth"
)

// Route paths served by the api function.
const (
	ProtectedPath = "/v1/{proxy+}"
	OpenAPIPath   = "/v1/openapi.json"
	HealthPath    = "/healthz"
	ReadyPath     = "/v1/health"
)

// Identity settings of the built-in user pool.
const (
	// WorkspaceAttribute is the custom attribute naming a user's workspace;
	// tokens carry it as the claim "custom:workspace" (jwtauth.ClaimWorkspace).
	WorkspaceAttribute = "workspace"
	// AdminGroup is the group of platform operators; tokens list it in
	// "cognito:groups", which the api function checks by default.
	AdminGroup = jwtauth.DefaultAdminGroup
)

// Props configures the HTTP API.
type Props struct {
	// Handler is the api function.
	Handler awslambda.IFunction
	// JWTIssuer and JWTAudience name an external identity provider; when both
	// are empty a Cognito user pool and app client are created and used.
	JWTIssuer   string
	JWTAudience string
	// CORSOrigin is the console's origin (may be a token).
	CORSOrigin *string
	// ThrottleRate (requests/second) and ThrottleBurst limit the default stage.
	ThrottleRate  int
	ThrottleBurst int
	// LogRetention applies to the access-log group.
	LogRetention awslogs.RetentionDays
	// Retain keeps the Cognito user pool when the stack is deleted.
	Retain bool
}

// API is the HTTP API and the identity settings its authorizer checks.
type API struct {
	constructs.Construct
	HTTPAPI    awsapigatewayv2.HttpApi
	Stage      awsapigatewayv2.HttpStage
	AccessLogs awslogs.LogGroup
	// Issuer and Audience are what the JWT authorizer checks; the api
	// function checks them again.
	Issuer   *string
	Audience *string
	// UserPool, UserPoolClient and Admins (the AdminGroup group) are nil
	// when an external issuer is configured.
	UserPool       awscognito.UserPool
	UserPoolClient awscognito.UserPoolClient
	Admins         awscognito.UserPoolGroup
}

// New creates the API under scope.
func New(scope constructs.Construct, id string, props Props) (*API, error) {
	if props.Handler == nil {
		return nil, fmt.Errorf("api: handler function is required")
	}
	if (props.JWTIssuer == "") != (props.JWTAudience == "") {
		return nil, fmt.Errorf("api: jwt issuer and audience must be set together")
	}
	if props.ThrottleRate <= 0 || props.ThrottleBurst <= 0 {
		return nil, fmt.Errorf("api: throttle rate %d and burst %d must be positive", props.ThrottleRate, props.ThrottleBurst)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	a := &API{Construct: c}
	if props.JWTIssuer == "" {
		a.newUserPool(props.Retain)
	} else {
		a.Issuer, a.Audience = jsii.String(props.JWTIssuer), jsii.String(props.JWTAudience)
	}
	a.HTTPAPI = awsapigatewayv2.NewHttpApi(c, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("gauntlet API"),
		CreateDefaultStage: jsii.Bool(false),
		CorsPreflight: &awsapigatewayv2.CorsPreflightOptions{
			AllowOrigins: &[]*string{props.CORSOrigin},
			AllowMethods: &[]awsapigatewayv2.CorsHttpMethod{awsapigatewayv2.CorsHttpMethod_ANY},
			AllowHeaders: jsii.Strings("authorization", "content-type", "idempotency-key"),
			MaxAge:       awscdk.Duration_Hours(jsii.Number(1)),
		},
	})
	a.addRoutes(props.Handler)
	a.AccessLogs = awslogs.NewLogGroup(c, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention:     props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	a.Stage = awsapigatewayv2.NewHttpStage(c, jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    a.HTTPAPI,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(float64(props.ThrottleRate)),
			BurstLimit: jsii.Number(float64(props.ThrottleBurst)),
		},
	})
	cfnStage := a.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfnStage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: a.AccessLogs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})
	return a, nil
}

// URL is the API's invoke URL (with a trailing slash).
func (a *API) URL() *string { return a.Stage.Url() }

func (a *API) addRoutes(handler awslambda.IFunction) {
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Api"), handler,
		&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
		})
	authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), a.Issuer,
		&awsapigatewayv2authorizers.HttpJwtAuthorizerProps{JwtAudience: &[]*string{a.Audience}})
	a.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String(ProtectedPath),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY},
		Integration: integration,
		Authorizer:  authorizer,
	})
	for _, path := range []string{OpenAPIPath, HealthPath, ReadyPath} {
		routes := a.HTTPAPI.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_GET},
			Integration: integration,
			Authorizer:  awsapigatewayv2.NewHttpNoneAuthorizer(),
		})
		for _, r := range *routes {
			cdknag.NagSuppressions_AddResourceSuppressions(r, &[]*cdknag.NagPackSuppression{{
				Id:     jsii.String("AwsSolutions-APIG4"),
				Reason: jsii.String("The OpenAPI document and the health checks are public by design: clients fetch the schema before they hold a token, and load balancers and uptime checks carry none."),
			}}, jsii.Bool(true))
		}
	}
}

// newUserPool creates the Cognito user pool and app client used when no
// external issuer is configured. Users are created by an administrator, who
// also sets their workspace and grants the admin group.
func (a *API) newUserPool(retain bool) {
	removal := awscdk.RemovalPolicy_DESTROY
	if retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	a.UserPool = awscognito.NewUserPool(a.Construct, jsii.String("UserPool"), &awscognito.UserPoolProps{
		SelfSignUpEnabled: jsii.Bool(false),
		SignInAliases:     &awscognito.SignInAliases{Email: jsii.Bool(true)},
		AccountRecovery:   awscognito.AccountRecovery_EMAIL_ONLY,
		PasswordPolicy: &awscognito.PasswordPolicy{
			MinLength:        jsii.Number(12),
			RequireLowercase: jsii.Bool(true),
			RequireUppercase: jsii.Bool(true),
			RequireDigits:    jsii.Bool(true),
			RequireSymbols:   jsii.Bool(true),
		},
		Mfa:                awscognito.Mfa_REQUIRED,
		MfaSecondFactor:    &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
		DeletionProtection: jsii.Bool(retain),
		RemovalPolicy:      removal,
		// Mutable so that an administrator can move a user; the app client
		// cannot write it (WriteAttributes below), so users cannot.
		CustomAttributes: &map[string]awscognito.ICustomAttribute{
			WorkspaceAttribute: awscognito.NewStringAttribute(&awscognito.StringAttributeProps{
				MinLen: jsii.Number(1), MaxLen: jsii.Number(128), Mutable: jsii.Bool(true),
			}),
		},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(a.UserPool, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-COG8"),
		Reason: jsii.String("The Plus feature plan is billed per active user; this pool has self sign-up off and TOTP MFA required. Deployments that need threat protection bring their own identity provider (context jwtIssuer) or upgrade the plan."),
	}}, jsii.Bool(false))
	a.UserPoolClient = a.UserPool.AddClient(jsii.String("Client"), &awscognito.UserPoolClientOptions{
		GenerateSecret:             jsii.Bool(false),
		AuthFlows:                  &awscognito.AuthFlow{UserSrp: jsii.Bool(true), UserPassword: jsii.Bool(true)},
		PreventUserExistenceErrors: jsii.Bool(true),
		EnableTokenRevocation:      jsii.Bool(true),
		AccessTokenValidity:        awscdk.Duration_Hours(jsii.Number(1)),
		IdTokenValidity:            awscdk.Duration_Hours(jsii.Number(1)),
		RefreshTokenValidity:       awscdk.Duration_Days(jsii.Number(30)),
		// The ID token carries only what the client may read: the workspace
		// must be readable. Users may change their name and email, never
		// their workspace.
		ReadAttributes: awscognito.NewClientAttributes().
			WithStandardAttributes(&awscognito.StandardAttributesMask{Email: jsii.Bool(true), EmailVerified: jsii.Bool(true), Fullname: jsii.Bool(true)}).
			WithCustomAttributes(jsii.String(WorkspaceAttribute)),
		WriteAttributes: awscognito.NewClientAttributes().
			WithStandardAttributes(&awscognito.StandardAttributesMask{Email: jsii.Bool(true), Fullname: jsii.Bool(true)}),
	})
	a.Admins = a.UserPool.AddGroup(jsii.String("Admins"), &awscognito.UserPoolGroupOptions{
		GroupName:   jsii.String(AdminGroup),
		Description: jsii.String("gauntlet platform operators: may create workspaces, set billing and add users (/v1/admin)"),
	})
	a.Issuer = a.UserPool.UserPoolProviderUrl()
	a.Audience = a.UserPoolClient.UserPoolClientId()
}

// accessLogFormat is one JSON object per request; it never includes headers
// or bodies, so tokens and secret values stay out of the logs.
const accessLogFormat = `{"requestId":"$context.requestId","requestTime":"$context.requestTime",` +
	`"ip":"$context.identity.sourceIp","method":"$context.httpMethod","routeKey":"$context.routeKey",` +
	`"path":"$context.path","status":"$context.status","protocol":"$context.protocol",` +
	`"responseLength":"$context.responseLength","latencyMs":"$context.responseLatency",` +
	`"integrationError":"$context.integrationErrorMessage","authorizerError":"$context.authorizer.error",` +
	`"subject":"$context.authorizer.claims.sub"}`
